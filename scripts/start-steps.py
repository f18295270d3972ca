#!/usr/bin/env python3
"""Where a worker's start goes, step by step (docs/performance.md).

Usage: scripts/start-steps.py BINARY js|py [RUNS]

Runs `BINARY exec` of a trivial program RUNS times (pools off, so the worker starts on the
request path) under `strace -f --seccomp-bpf -ttt`, tracing only the calls that mark the
steps, and prints the median (and minimum) time between consecutive steps, from the host's
spawn of the sandbox helper (a `clone` of the whole host, or since issue #26 a `clone3` with
CLONE_VM|CLONE_VFORK: posix_spawn) to the worker's `ready` frame. Needs strace.
"""
import os, re, statistics, subprocess, sys, tempfile
B = os.path.abspath(sys.argv[1]); lang = sys.argv[2]; runs = int(sys.argv[3]) if len(sys.argv) > 3 else 7
work = tempfile.mkdtemp(prefix='start-steps-')
os.chdir(work)
open('t.ts', 'w').write('return 1 + 1\n')
open('t.py', 'w').write('1 + 1\n')
open('empty.json', 'w').write('{"mcpServers": {}}\n')
src = 't.ts' if lang == 'js' else 't.py'
rows = []
for r in range(runs):
    out = os.path.join(work, f'strace_{lang}_{r}.txt')
    args = [B, '--config', 'empty.json', '--no-discover', '--pool-size', '0', '--python-pool-size', '0']
    if lang == 'js':
        # No Python interpreter lookup running next to the measured start.
        args += ['--python', '/nonexistent/python3']
    subprocess.run(['strace', '-f', '--seccomp-bpf', '-ttt', '-e',
                    'trace=execve,clone,clone3,vfork,unshare,pivot_root,landlock_restrict_self,seccomp,write,exit_group',
                    '-o', out] + args + ['exec', src], capture_output=True)
    lines = open(out).read().splitlines()
    ev = {}
    helper = None; init = None; payload = None
    def ts(l): return float(l.split()[1])
    for l in lines:
        m = re.match(r'(\d+)\s+(\S+)\s+(.*)', l)
        if not m: continue
        pid, t, rest = int(m.group(1)), float(m.group(2)), m.group(3)
        if rest.startswith('execve(') and '"__sandbox"' in rest and 'resumed' not in rest and helper is None:
            helper = pid; ev['exec_helper'] = t
        elif pid == helper and rest.startswith('unshare('):
            ev['unshare'] = t
        elif pid == helper and rest.startswith('clone(') and 'init_fork' not in ev:
            ev['init_fork'] = t
            mm = re.search(r'= (\d+)$', rest)
            if mm: init = int(mm.group(1))
        elif init and pid == init and rest.startswith('pivot_root'):
            ev['pivot_root'] = t
        elif init and pid == init and rest.startswith('clone(') and 'payload_fork' not in ev:
            ev['payload_fork'] = t
        elif rest.startswith('landlock_restrict_self') and 'landlock' not in ev and helper is not None:
            ev['landlock'] = t; payload = pid
        elif payload and pid == payload and rest.startswith('seccomp(') and 'seccomp' not in ev:
            ev['seccomp'] = t
        elif payload and pid == payload and rest.startswith('execve(') and 'exec_payload' not in ev:
            ev['exec_payload'] = t
        elif payload and pid == payload and rest.startswith('write(') and 'ready' in rest and 'ready' not in ev:
            ev['ready'] = t
    # the host's spawn of the helper: the start of the clone (a full fork) or clone3 (with
    # CLONE_VM|CLONE_VFORK: posix_spawn) whose result is the helper pid. A vfork-style clone3
    # is split by strace into `<unfinished ...>` and `<... clone3 resumed>` lines.
    pending = {}
    for l in lines:
        m = re.match(r'(\d+)\s+(\S+)\s+(.*)', l)
        if not m or not helper: continue
        pid, t, rest = int(m.group(1)), float(m.group(2)), m.group(3)
        if re.match(r'(clone3?|vfork)\(', rest):
            if rest.endswith('= %d' % helper):
                ev['host_fork'] = t; break
            if rest.endswith('<unfinished ...>'):
                pending[pid] = t
        elif re.match(r'<\.\.\. (clone3?|vfork) resumed>.*= %d$' % helper, rest) and pid in pending:
            ev['host_fork'] = pending[pid]; break
    rows.append(ev)
keys = ['host_fork','exec_helper','unshare','init_fork','pivot_root','payload_fork','landlock','seccomp','exec_payload','ready']
print('step (from previous), median ms over', runs, 'runs')
prev = None
for k in keys:
    if prev:
        d = [ (r[k]-r[prev])*1e3 for r in rows if k in r and prev in r]
        if d: print(f'{prev:>13} -> {k:<13} {statistics.median(d):7.2f}  (min {min(d):.2f})')
    if any(k in r for r in rows): prev = k
tot = [ (r['ready']-r['host_fork'])*1e3 for r in rows if 'ready' in r and 'host_fork' in r]
if tot: print(f'{"total":>30} {statistics.median(tot):7.2f}  (min {min(tot):.2f})')
