#!/usr/bin/env python3
"""Writes deploy/container/seccomp.json: a container runtime's default seccomp profile plus
exactly what code-executor-mcp's sandbox needs inside the container (docs/container.md).

    python3 deploy/container/seccomp-profile.py [DEFAULT_PROFILE] > deploy/container/seccomp.json

DEFAULT_PROFILE defaults to /usr/share/containers/seccomp.json (containers-common, the profile
Podman, Buildah and CRI-O use; Docker's default is a subset of it). The sandbox creates a user
namespace (unshare), builds its filesystem view there (mount, umount2, pivot_root,
mount_setattr), names its UTS namespace (sethostname) and restricts itself (landlock_*,
seccomp). The defaults allow those only with CAP_SYS_ADMIN (Docker: unshare, mount, umount2,
pivot_root; Podman: sethostname), which the container must not have. Allowing the syscalls
gives the container nothing new: without CAP_SYS_ADMIN in the container's own user namespace
the kernel refuses them there; they work only inside a user namespace the process created,
on what it owns. `setns`, `bpf`, `perf_event_open`, `keyctl` and the rest stay as the default
has them.
"""
import json
import sys

NEEDED = [
    "unshare", "clone", "mount", "umount2", "pivot_root", "mount_setattr", "sethostname",
    "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self",
]


def main() -> None:
    source = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/containers/seccomp.json"
    with open(source) as f:
        profile = json.load(f)
    rules = []
    for rule in profile["syscalls"]:
        names = [n for n in rule["names"] if n not in NEEDED]
        if names:
            rules.append({**rule, "names": names})
    # One unconditional rule for the sandbox's syscalls, first so it is easy to review.
    rules.insert(0, {
        "names": NEEDED,
        "action": "SCMP_ACT_ALLOW",
        "args": [],
        "comment": "code-executor-mcp sandbox: a user namespace and its filesystem view "
                   "(docs/container.md); the kernel still requires CAP_SYS_ADMIN in the "
                   "owning user namespace",
        "includes": {},
        "excludes": {},
    })
    profile["syscalls"] = rules
    json.dump(profile, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
