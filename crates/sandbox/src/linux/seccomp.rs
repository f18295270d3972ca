//! seccomp-bpf (step 12, the last before `execve`): a deny list. Denied calls return EPERM
//! instead of killing the process, so the payload sees a clear "Operation not permitted".
//!
//! Three filters are installed; for any call the strictest answer wins:
//! 1. EPERM for the calls below, for `socket`/`socketpair` of any family but AF_UNIX, and for
//!    `clone` with a namespace flag;
//! 2. ENOSYS for `clone3`, whose flags live in memory a filter cannot read: libc then falls back
//!    to `clone`, which filter 1 checks;
//! 3. on x86_64, EPERM for the x32 ABI (syscall numbers with bit 30 set), which would
//!    otherwise reach the same kernel code under numbers filter 1 does not list.

use std::collections::BTreeMap;

use nix::libc;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch, sock_filter,
};

use crate::error::SetupError;
use crate::linux::layers::layer;

/// Denied whatever their arguments: debugging other processes, kernel keyrings, BPF, perf,
/// io_uring (which bypasses this filter for the operations it queues), mounts and namespaces,
/// module loading, kexec, and a few more administrative calls.
const DENIED: &[(&str, libc::c_long)] = &[
    ("ptrace", libc::SYS_ptrace),
    ("process_vm_readv", libc::SYS_process_vm_readv),
    ("process_vm_writev", libc::SYS_process_vm_writev),
    ("mount", libc::SYS_mount),
    ("umount2", libc::SYS_umount2),
    ("pivot_root", libc::SYS_pivot_root),
    ("chroot", libc::SYS_chroot),
    ("open_tree", libc::SYS_open_tree),
    ("move_mount", libc::SYS_move_mount),
    ("fsopen", libc::SYS_fsopen),
    ("fsconfig", libc::SYS_fsconfig),
    ("fsmount", libc::SYS_fsmount),
    ("fspick", libc::SYS_fspick),
    ("mount_setattr", libc::SYS_mount_setattr),
    ("unshare", libc::SYS_unshare),
    ("setns", libc::SYS_setns),
    ("bpf", libc::SYS_bpf),
    ("perf_event_open", libc::SYS_perf_event_open),
    ("keyctl", libc::SYS_keyctl),
    ("add_key", libc::SYS_add_key),
    ("request_key", libc::SYS_request_key),
    ("io_uring_setup", libc::SYS_io_uring_setup),
    ("io_uring_enter", libc::SYS_io_uring_enter),
    ("io_uring_register", libc::SYS_io_uring_register),
    ("kexec_load", libc::SYS_kexec_load),
    ("kexec_file_load", libc::SYS_kexec_file_load),
    ("init_module", libc::SYS_init_module),
    ("finit_module", libc::SYS_finit_module),
    ("delete_module", libc::SYS_delete_module),
    ("userfaultfd", libc::SYS_userfaultfd),
    ("open_by_handle_at", libc::SYS_open_by_handle_at),
    ("acct", libc::SYS_acct),
    ("swapon", libc::SYS_swapon),
    ("swapoff", libc::SYS_swapoff),
    ("reboot", libc::SYS_reboot),
];

/// `clone` flags that would make a new namespace.
#[cfg_attr(all(target_arch = "x86_64", not(test)), allow(dead_code))]
const NAMESPACE_FLAGS: &[libc::c_int] = &[
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWNS,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWCGROUP,
    // CLONE_NEWTIME (0x80) is only valid for unshare/clone3; harmless to list.
    0x80,
];

/// The programs to install: the table built into the binary, or compiled here.
pub(crate) enum Filters {
    Table(&'static [&'static [sock_filter]]),
    #[cfg_attr(target_arch = "x86_64", allow(dead_code))]
    Compiled(Vec<BpfProgram>),
}

impl Filters {
    fn programs(&self) -> Vec<&[sock_filter]> {
        match self {
            Filters::Table(table) => table.to_vec(),
            Filters::Compiled(programs) => programs.iter().map(Vec::as_slice).collect(),
        }
    }
}

/// The filters, compiled when the binary was built where this architecture has a table
/// (`seccomp_table.rs`, checked by a test to be exactly what [`compile_rules`] gives, so the
/// rules above and the table cannot drift apart); compiled here otherwise. Nothing of them
/// comes from the configuration: there is nothing a host could hand the helper to weaken.
pub(crate) fn compile() -> Result<Filters, SetupError> {
    #[cfg(target_arch = "x86_64")]
    {
        Ok(Filters::Table(table::PROGRAMS))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        compile_rules().map(Filters::Compiled)
    }
}

#[cfg(target_arch = "x86_64")]
#[path = "seccomp_table.rs"]
mod table;

fn err(e: &dyn std::fmt::Display) -> SetupError {
    SetupError::new(layer::SECCOMP, e.to_string())
}

#[cfg_attr(all(target_arch = "x86_64", not(test)), allow(dead_code))]
fn arch() -> Result<TargetArch, SetupError> {
    std::env::consts::ARCH.try_into().map_err(|e| err(&e))
}

/// Compiles the filters from the rules above with seccompiler (allocates; done before rlimits
/// apply). About 15 µs; [`compile`] takes them from the binary instead where it can.
#[cfg_attr(all(target_arch = "x86_64", not(test)), allow(dead_code))]
pub(crate) fn compile_rules() -> Result<Vec<BpfProgram>, SetupError> {
    let arch = arch()?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for (_, nr) in DENIED {
        rules.insert(*nr, Vec::new());
    }
    let not_unix = || -> Result<Vec<SeccompRule>, SetupError> {
        let cond = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            libc::AF_UNIX as u64,
        )
        .map_err(|e| err(&e))?;
        Ok(vec![SeccompRule::new(vec![cond]).map_err(|e| err(&e))?])
    };
    rules.insert(libc::SYS_socket, not_unix()?);
    rules.insert(libc::SYS_socketpair, not_unix()?);
    let mut clone_rules = Vec::new();
    for flag in NAMESPACE_FLAGS {
        let flag = *flag as u64;
        let cond = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Qword,
            SeccompCmpOp::MaskedEq(flag),
            flag,
        )
        .map_err(|e| err(&e))?;
        clone_rules.push(SeccompRule::new(vec![cond]).map_err(|e| err(&e))?);
    }
    rules.insert(libc::SYS_clone, clone_rules);
    let deny = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| err(&e))?;

    let clone3 = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .map_err(|e| err(&e))?;

    let mut programs = vec![
        BpfProgram::try_from(deny).map_err(|e| err(&e))?,
        BpfProgram::try_from(clone3).map_err(|e| err(&e))?,
    ];
    if cfg!(target_arch = "x86_64") {
        programs.push(x32_filter());
    }
    Ok(programs)
}

/// Denies every x32 system call (number with `__X32_SYSCALL_BIT`) on x86_64.
#[cfg_attr(all(target_arch = "x86_64", not(test)), allow(dead_code))]
fn x32_filter() -> BpfProgram {
    const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const JGE_K: u16 = 0x35; // BPF_JMP | BPF_JGE | BPF_K
    const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const RET_K: u16 = 0x06; // BPF_RET | BPF_K
    const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    const RET_ALLOW: u32 = 0x7fff_0000;
    const RET_ERRNO: u32 = 0x0005_0000;
    let op = |code, k, jt, jf| sock_filter { code, jt, jf, k };
    vec![
        op(LD_W_ABS, 4, 0, 0),              // A = seccomp_data.arch
        op(JEQ_K, AUDIT_ARCH_X86_64, 0, 2), // not x86_64: allow (filter 1 kills it)
        op(LD_W_ABS, 0, 0, 0),              // A = seccomp_data.nr
        op(JGE_K, X32_SYSCALL_BIT, 1, 0),   // x32 number: deny
        op(RET_K, RET_ALLOW, 0, 0),
        op(RET_K, RET_ERRNO | libc::EPERM as u32, 0, 0),
    ]
}

/// Installs the filters on this thread. Needs no_new_privs (step 9).
pub(crate) fn apply(filters: &Filters) -> Result<String, SetupError> {
    let programs = filters.programs();
    if programs.len() < 2 || programs.iter().any(|p| p.is_empty()) {
        return Err(err(&"no filter to install (the built-in table is empty)"));
    }
    for program in programs {
        seccompiler::apply_filter(program)
            .map_err(|e| err(&format!("installing a filter: {e}")))?;
    }
    let names: Vec<&str> = DENIED.iter().map(|(name, _)| *name).collect();
    Ok(format!(
        "EPERM for {}, clone with namespace flags, sockets other than AF_UNIX{}; ENOSYS for clone3",
        names.join(" "),
        if cfg!(target_arch = "x86_64") {
            ", x32 syscalls"
        } else {
            ""
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table built into the binary is exactly what the rules compile to. After changing
    /// the rules, `SECCOMP_TABLE_WRITE=1 cargo test -p code-executor-mcp-sandbox --lib seccomp`
    /// writes it again (review the diff: it is the filter the payload gets).
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn the_built_in_table_is_what_the_rules_compile_to() {
        let compiled = compile_rules().unwrap();
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/linux/seccomp_table.rs");
        if std::env::var_os("SECCOMP_TABLE_WRITE").is_some_and(|v| v == "1") {
            let mut out = String::from(
                "//! The seccomp filters of `seccomp.rs` as compiled for x86_64: written by the test\n\
                 //! `the_built_in_table_is_what_the_rules_compile_to` (`SECCOMP_TABLE_WRITE=1`), which\n\
                 //! fails when the rules and this table differ. One row per instruction:\n\
                 //! (code, jt, jf, k).\n\nuse seccompiler::sock_filter;\n\n\
                 const fn op(code: u16, jt: u8, jf: u8, k: u32) -> sock_filter {\n    \
                 sock_filter { code, jt, jf, k }\n}\n\n\
                 pub(super) const PROGRAMS: &[&[sock_filter]] = &[\n",
            );
            for program in &compiled {
                out.push_str("    &[\n");
                for i in program {
                    out.push_str(&format!(
                        "        op({:#06x}, {}, {}, {:#x}),\n",
                        i.code, i.jt, i.jf, i.k
                    ));
                }
                out.push_str("    ],\n");
            }
            out.push_str("];\n");
            std::fs::write(path, out).unwrap();
        }
        let table: Vec<Vec<(u16, u8, u8, u32)>> = table::PROGRAMS
            .iter()
            .map(|p| p.iter().map(|i| (i.code, i.jt, i.jf, i.k)).collect())
            .collect();
        let rules: Vec<Vec<(u16, u8, u8, u32)>> = compiled
            .iter()
            .map(|p| p.iter().map(|i| (i.code, i.jt, i.jf, i.k)).collect())
            .collect();
        assert!(
            table == rules,
            "{path} is not what the rules compile to: run this test with SECCOMP_TABLE_WRITE=1"
        );
    }
}
