//! What the host tells the helper: serialised, then carried in the helper's environment
//! (`spawn::config_env`: variables `CODE_EXECUTOR_SANDBOX_CONFIG_<n>`, NUL escaped), never in
//! argv, which every local user can read; `/proc/<pid>/environ` is readable by the same user
//! only, and the helper removes the variables and wipes that memory once it has read them.
//! The dynamic loader reads only `LD_*` and `GLIBC_TUNABLES`, so the worker's own environment
//! inside these values never reaches the helper's loader.
//!
//! Encoding: `key NUL value NUL` pairs. No value can contain NUL (execve and paths forbid it),
//! so the encoding is unambiguous without escaping. The view's plan, when the host sends one:
//! `plan` (its number of steps), then per step `pdir PATH`, `plink PATH` followed by
//! `pto TARGET`, or `pbind` with the access letter, `d` or `f`, and the path in one value.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

use std::sync::Arc;

use crate::error::DecodeError;
use crate::linux::view::{Access, Step};
use crate::policy::ResourceLimits;

/// One byte per access in the configuration.
const ACCESS_CODES: &[(Access, u8)] = &[
    (Access::Hidden, b'h'),
    (Access::Data, b'd'),
    (Access::ReadOnly, b'r'),
    (Access::Device, b'v'),
    (Access::ReadWrite, b'w'),
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HelperConfig {
    /// Apply every layer, report them on stdout, and exit instead of executing a payload.
    pub probe: bool,
    pub program: Option<PathBuf>,
    /// argv of the payload after argv[0] (which is `program`).
    pub args: Vec<OsString>,
    /// `KEY=VALUE` entries: the payload's whole environment.
    pub env: Vec<OsString>,
    pub cwd: Option<PathBuf>,
    pub read_only: Vec<PathBuf>,
    /// Directories shown empty (see `SandboxPolicy::hidden_paths`).
    pub hidden: Vec<PathBuf>,
    /// Read-only, never executable (see `SandboxPolicy::data_paths`).
    pub data: Vec<PathBuf>,
    pub scratch: Option<PathBuf>,
    /// Where `scratch` is mounted inside the view (`None`: at its own path).
    pub scratch_at: Option<PathBuf>,
    pub limits: ResourceLimits,
    /// The view's shared plan (program, read-only and data paths, devices), resolved by the
    /// host once per spawner ([`crate::linux::mounts::cached`]); the helper checks it against the
    /// paths above and the host's files. `None`: the helper resolves it itself.
    pub plan: Option<Arc<Vec<Step>>>,
}

impl HelperConfig {
    /// Where the payload sees the scratch directory.
    pub fn scratch_inside(&self) -> Option<&std::path::Path> {
        self.scratch_at.as_deref().or(self.scratch.as_deref())
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let mut put = |key: &str, value: &OsStr| {
            out.extend_from_slice(key.as_bytes());
            out.push(0);
            out.extend_from_slice(value.as_bytes());
            out.push(0);
        };
        if self.probe {
            put("probe", OsStr::new("1"));
        }
        if let Some(program) = &self.program {
            put("program", program.as_os_str());
        }
        for arg in &self.args {
            put("arg", arg);
        }
        for entry in &self.env {
            put("env", entry);
        }
        if let Some(cwd) = &self.cwd {
            put("cwd", cwd.as_os_str());
        }
        for path in &self.read_only {
            put("ro", path.as_os_str());
        }
        for path in &self.hidden {
            put("hide", path.as_os_str());
        }
        for path in &self.data {
            put("data", path.as_os_str());
        }
        if let Some(scratch) = &self.scratch {
            put("scratch", scratch.as_os_str());
        }
        if let Some(at) = &self.scratch_at {
            put("scratch_at", at.as_os_str());
        }
        let l = &self.limits;
        for (key, value) in [
            ("as", l.address_space_bytes),
            ("cpu", l.cpu_seconds),
            ("nproc", l.max_processes),
            ("nofile", l.max_open_files),
            ("fsize", l.max_file_size_bytes),
        ] {
            put(key, OsStr::new(&value.to_string()));
        }
        if let Some(plan) = &self.plan {
            put("plan", OsStr::new(&plan.len().to_string()));
            for step in plan.iter() {
                match step {
                    Step::Dir(path) => put("pdir", path.as_os_str()),
                    Step::Symlink { path, target } => {
                        put("plink", path.as_os_str());
                        put("pto", target.as_os_str());
                    }
                    Step::Bind {
                        path,
                        access,
                        is_dir,
                    } => {
                        let code = ACCESS_CODES
                            .iter()
                            .find(|(a, _)| a == access)
                            .map_or(b'?', |(_, c)| *c);
                        let mut value = vec![code, if *is_dir { b'd' } else { b'f' }];
                        value.extend_from_slice(path.as_os_str().as_bytes());
                        put("pbind", OsStr::from_bytes(&value));
                    }
                    // Never in a shared plan (the scratch directory is each worker's own); the
                    // helper would refuse the plan anyway.
                    Step::BindAt { path, .. } => put("pbindat", path.as_os_str()),
                }
            }
        }
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut cfg = HelperConfig {
            probe: false,
            program: None,
            args: Vec::new(),
            env: Vec::new(),
            cwd: None,
            read_only: Vec::new(),
            hidden: Vec::new(),
            data: Vec::new(),
            scratch: None,
            scratch_at: None,
            limits: ResourceLimits::default(),
            plan: None,
        };
        let mut plan_len: Option<u64> = None;
        let mut plan: Vec<Step> = Vec::new();
        let mut link: Option<PathBuf> = None;
        let body = bytes.strip_suffix(&[0]).ok_or(DecodeError::NoNul)?;
        let mut tokens = body.split(|b| *b == 0);
        while let Some(key) = tokens.next() {
            let value = tokens
                .next()
                .ok_or_else(|| DecodeError::NoValue(String::from_utf8_lossy(key).into_owned()))?;
            let os = || OsString::from_vec(value.to_vec());
            let number = || -> Result<u64, DecodeError> {
                std::str::from_utf8(value)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| {
                        DecodeError::BadNumber(String::from_utf8_lossy(key).into_owned())
                    })
            };
            if key != b"pto"
                && let Some(path) = &link
            {
                return Err(DecodeError::NoTarget(path.clone()));
            }
            match key {
                b"plan" => plan_len = Some(number()?),
                b"pdir" => plan.push(Step::Dir(os().into())),
                b"plink" => link = Some(os().into()),
                b"pto" => {
                    let path = link.take().ok_or(DecodeError::TargetWithoutLink)?;
                    plan.push(Step::Symlink {
                        path,
                        target: os().into(),
                    });
                }
                b"pbind" => {
                    let (code, kind, path) = match value {
                        [code, kind, path @ ..] if !path.is_empty() => (code, kind, path),
                        _ => return Err(DecodeError::MalformedBind),
                    };
                    let access = ACCESS_CODES
                        .iter()
                        .find(|(_, c)| c == code)
                        .map(|(a, _)| *a)
                        .ok_or(DecodeError::UnknownAccess)?;
                    let is_dir = match kind {
                        b'd' => true,
                        b'f' => false,
                        _ => return Err(DecodeError::MalformedBind),
                    };
                    plan.push(Step::Bind {
                        path: OsString::from_vec(path.to_vec()).into(),
                        access,
                        is_dir,
                    });
                }
                b"pbindat" => return Err(DecodeError::SharedBindAt),
                b"probe" => cfg.probe = value == b"1",
                b"program" => cfg.program = Some(os().into()),
                b"arg" => cfg.args.push(os()),
                b"env" => cfg.env.push(os()),
                b"cwd" => cfg.cwd = Some(os().into()),
                b"ro" => cfg.read_only.push(os().into()),
                b"hide" => cfg.hidden.push(os().into()),
                b"data" => cfg.data.push(os().into()),
                b"scratch" => cfg.scratch = Some(os().into()),
                b"scratch_at" => cfg.scratch_at = Some(os().into()),
                b"as" => cfg.limits.address_space_bytes = number()?,
                b"cpu" => cfg.limits.cpu_seconds = number()?,
                b"nproc" => cfg.limits.max_processes = number()?,
                b"nofile" => cfg.limits.max_open_files = number()?,
                b"fsize" => cfg.limits.max_file_size_bytes = number()?,
                other => {
                    return Err(DecodeError::UnknownKey(
                        String::from_utf8_lossy(other).into_owned(),
                    ));
                }
            }
        }
        if let Some(path) = link {
            return Err(DecodeError::NoTarget(path));
        }
        match plan_len {
            Some(n) if n == plan.len() as u64 => cfg.plan = Some(Arc::new(plan)),
            Some(n) => {
                return Err(DecodeError::PlanLength {
                    expected: n,
                    held: plan.len(),
                });
            }
            None if plan.is_empty() => {}
            None => return Err(DecodeError::StepsWithoutPlan),
        }
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_field() {
        let cfg = HelperConfig {
            probe: true,
            program: Some("/usr/bin/python3.11".into()),
            args: vec!["-I".into(), "-c".into(), "print('a=b')".into(), "".into()],
            env: vec!["PATH=/usr/bin".into(), "EMPTY=".into()],
            cwd: Some("/scratch dir".into()),
            read_only: vec!["/opt/a".into(), "/opt/b".into()],
            hidden: vec!["/opt/a/site-packages".into()],
            data: vec!["/home/me/project".into()],
            scratch: Some("/tmp/x".into()),
            scratch_at: Some("/workspace".into()),
            limits: ResourceLimits {
                address_space_bytes: u64::MAX,
                cpu_seconds: 3,
                max_processes: 4,
                max_open_files: 5,
                max_file_size_bytes: 6,
            },
            plan: Some(Arc::new(vec![
                Step::Dir("/usr".into()),
                Step::Symlink {
                    path: "/bin".into(),
                    target: "usr/bin".into(),
                },
                Step::Bind {
                    path: "/usr/bin/dash".into(),
                    access: Access::ReadOnly,
                    is_dir: false,
                },
                Step::Bind {
                    path: "/home/me/project".into(),
                    access: Access::Data,
                    is_dir: true,
                },
                Step::Bind {
                    path: "/dev/null".into(),
                    access: Access::Device,
                    is_dir: false,
                },
            ])),
        };
        assert_eq!(HelperConfig::decode(&cfg.encode()), Ok(cfg));
    }

    #[test]
    fn rejects_truncated_input() {
        let errs: Vec<String> = [
            &b"program\0/bin/sh"[..],
            b"program\0",
            b"nope\0x\0",
            b"plan\x002\0pdir\0/usr\0",
            b"pdir\0/usr\0",
            b"plan\x001\0plink\0/bin\0",
            b"plan\x001\0pbind\0xf/etc\0",
            b"plan\x001\0pbindat\0/workspace\0",
        ]
        .iter()
        .map(|b| HelperConfig::decode(b).err().unwrap().to_string())
        .collect();
        assert_eq!(
            errs,
            [
                "configuration does not end with NUL",
                "key \"program\" has no value",
                "unknown key \"nope\"",
                "plan of 2 steps holds 1",
                "plan steps without a plan",
                "plan symlink /bin has no target",
                "unknown access in a plan bind",
                "a shared plan may not bind at another path",
            ]
        );
    }
}
