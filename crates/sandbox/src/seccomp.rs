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

use crate::helper::SetupError;
use crate::report::layer;

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

pub(crate) struct Filters(Vec<BpfProgram>);

fn err(e: &dyn std::fmt::Display) -> SetupError {
    SetupError::new(layer::SECCOMP, e.to_string())
}

fn arch() -> Result<TargetArch, SetupError> {
    std::env::consts::ARCH.try_into().map_err(|e| err(&e))
}

/// Compiles the filters (allocates; done before rlimits apply).
pub(crate) fn compile() -> Result<Filters, SetupError> {
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
    Ok(Filters(programs))
}

/// Denies every x32 system call (number with `__X32_SYSCALL_BIT`) on x86_64.
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
    for program in &filters.0 {
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
