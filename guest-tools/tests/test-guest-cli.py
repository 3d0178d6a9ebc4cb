#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""daxfile-guest on this host, without NVDIMM hardware: usage errors and
exit codes, check's JSON and TAP well-formed (a host without NVDIMM gives
a FAIL, not a crash), write/verify on a plain directory with
--allow-non-dax, a flipped byte named by offset, an interrupted write
(DAXFILE_TEST_CRASH, in builds with -Dtest_seams=true), locate and bench
failing or working cleanly."""

import json
import os
import re
import signal
import sys

import daxtest

sys.dont_write_bytecode = True

GUEST = os.environ.get('DAXFILE_GUEST', daxtest.build_path(
    'guest-tools', 'daxfile-guest'))
CHECK_KEYS = {'check', 'subject', 'result', 'detail', 'hint'}


def guest(*args, **kw):
    return daxtest.run(daxtest.WRAPPER + [GUEST] + [str(a) for a in args],
                       **kw)


def one_line(res, rc):
    lines = res.err.splitlines()
    return (res.rc == rc and len(lines) == 1 and
            lines[0].startswith('daxfile-guest'))


def test_usage(t):
    for args, what in [((), 'no command'),
                       (('frobnicate',), 'unknown command'),
                       (('write', '--seed', '1'), 'write without target'),
                       (('write', '--dir', '/tmp', '--dev', '/dev/dax0.0',
                         '--seed', '1'), 'write with --dir and --dev'),
                       (('write', '--dir', '/tmp'), 'write without --seed'),
                       (('verify', '--dir', '/tmp', '--seed', 'x1'),
                        'verify with a bad --seed'),
                       (('write', '--dir', '/tmp', '--seed', '1', '--size',
                         'lots'), 'write with a bad --size'),
                       (('locate', '--dir', '/tmp'), 'locate without offset'),
                       (('check', '--json', '--tap'), 'check --json --tap'),
                       (('check', 'extra'), 'check with an argument'),
                       (('bench', '--bogus'), 'bench with a bad option')]:
        r = guest(*args)
        t.ok(one_line(r, 2) and 'help' in r.err,
             f'usage error, exit 2, one line: {what}', r)
    r = guest('--help')
    t.ok(r.rc == 0 and 'Commands:' in r.out and 'verify' in r.out,
         '--help lists the commands', r)
    r = guest('write', '--help')
    t.ok(r.rc == 0 and '--seed' in r.out and not r.err,
         'write --help on stdout, exit 0', r)


def test_check(t):
    r = guest('check', '--json')
    t.ok(r.rc in (0, 1), 'check --json: exit 0 or 1, no crash', r)
    try:
        checks = r.json()
    except ValueError:
        checks = None
    t.ok(isinstance(checks, list) and checks, 'check --json is an array', r)
    checks = checks or []
    t.ok(all(set(c) == CHECK_KEYS for c in checks),
         'every entry has exactly check, subject, result, detail, hint',
         json.dumps(checks, indent=1))
    t.ok(all(re.fullmatch(r'[a-z][a-z0-9_]*', c.get('check', ''))
             for c in checks), 'check ids are snake_case')
    t.ok(all(c.get('result') in ('pass', 'warn', 'fail') for c in checks),
         'results are pass, warn or fail')
    t.ok(all(c['result'] == 'pass' or c.get('hint') for c in checks),
         'every warn and fail carries a hint')
    fails = [c for c in checks if c.get('result') == 'fail']
    t.is_(r.rc, 1 if fails else 0, 'exit 1 exactly when a check fails')
    if not os.path.exists('/sys/firmware/acpi/tables/NFIT'):
        t.ok(checks and checks[0]['check'] == 'nfit_table' and
             checks[0]['result'] == 'fail' and
             'nvdimm' in checks[0]['hint'].lower(),
             'no NVDIMM here: the first check is a FAIL with a hint', r)
    else:
        t.skip('no NVDIMM here: the first check is a FAIL with a hint',
               'this host has an NFIT table')

    r = guest('check', '--tap')
    lines = r.out.splitlines()
    tests = [ln for ln in lines if re.match(r'(not )?ok ', ln)]
    good = (len(lines) > 2 and lines[0] == 'TAP version 13' and
            lines[1] == f'1..{len(tests)}' and
            all(re.fullmatch(r'(not )?ok (\d+) - [^#]+', ln) and
                int(ln.split()[1 if ln.startswith('ok') else 2]) == i + 1
                for i, ln in enumerate(tests)) and
            all(ln.startswith('# ') for ln in lines[2:] if ln not in tests))
    t.ok(good, 'check --tap is well-formed TAP', r)
    t.is_(r.rc, 1 if any(ln.startswith('not ok') for ln in tests) else 0,
          'check --tap: exit 1 exactly when a test point is not ok')
    r = guest('check')
    t.ok(r.rc in (0, 1) and all(ln.startswith('Checking ')
                                for ln in r.out.splitlines()),
         'check: one "Checking ..." line per check', r)


def test_pattern(t, d):
    dat = os.path.join(d, 'daxfile-guest.dat')
    r = guest('write', '--dir', d, '--seed', 5, '--size', '4M')
    t.ok(one_line(r, 1) and 'MAP_SYNC' in r.err,
         'write on a non-DAX directory: refused, one line naming MAP_SYNC', r)
    r = guest('write', '--dir', d, '--seed', 5, '--size', '4M',
              '--allow-non-dax', '--json')
    ok = r.rc == 0 and r.json()[0]['sequence'] == 1 and \
        os.path.getsize(dat) == 4 << 20
    t.ok(ok, 'write --allow-non-dax: 4 MiB, sequence 1, JSON', r)
    r = guest('verify', '--dir', d, '--seed', 5, '--json')
    t.ok(r.rc == 0 and r.json()[0]['result'] == 'ok', 'verify passes', r)
    r = guest('write', '--dir', d, '--seed', 5, '--allow-non-dax',
              '--size', '4M', '--json')
    t.ok(r.rc == 0 and r.json()[0]['sequence'] == 2,
         'a second write has sequence 2', r)
    r = guest('verify', '--dir', d, '--seed', 6)
    t.ok(one_line(r, 1) and 'seed 5, not 6' in r.err,
         'verify with another seed: exit 1, names both seeds', r)

    with open(dat, 'r+b') as f:
        f.seek(0x5064)
        b = f.read(1)
        f.seek(0x5064)
        f.write(bytes([b[0] ^ 0x40]))
    r = guest('verify', '--dir', d, '--seed', 5, '--json')
    res = r.json()[0] if r.out else {}
    t.ok(one_line(r, 1) and 'offset 0x5064 (payload of block 5)' in r.err,
         'a flipped byte: exit 1, the error names offset 0x5064', r)
    t.ok(res.get('result') == 'corrupt' and
         res.get('first_bad_offset') == 0x5064 and res.get('bad_bytes') == 1,
         'verify --json: corrupt, first_bad_offset 0x5064, 1 bad byte', r)
    with open(dat, 'r+b') as f:
        f.seek(0x5064)
        f.write(b)

    crash = ('write killed between data and commit',
             'verify after it: interrupted write of sequence 3')
    if daxtest.seams_cases(t, crash, GUEST):
        r = guest('write', '--dir', d, '--seed', 5, '--allow-non-dax',
                  '--size', '4M',
                  env={'DAXFILE_TEST_CRASH': 'guest-write-commit'})
        t.is_(r.rc, -signal.SIGKILL, crash[0])
        r = guest('verify', '--dir', d, '--seed', 5)
        t.ok(one_line(r, 1) and 'sequence 3' in r.err and
             'interrupted' in r.err, crash[1], r)

    r = guest('locate', '--dir', d, '--offset', '0x5064')
    t.ok(one_line(r, 1), 'locate off NVDIMM: one-line error, exit 1', r)
    r = guest('verify', '--dir', os.path.join(d, 'nope'), '--seed', 1)
    t.ok(one_line(r, 1) and 'nope' in r.err,
         'verify in a missing directory: one-line error naming it', r)
    r = guest('write', '--dev', dat, '--seed', 1)
    t.ok(one_line(r, 1) and 'device-dax' in r.err,
         'write --dev on a regular file: refused, one line', r)


def test_bench(t, d):
    r = guest('bench', '--dir', d, '--size', '40M', '--allow-non-dax',
              '--json')
    try:
        rows = r.json()
    except ValueError:
        rows = []
    names = [x.get('metric') for x in rows]
    t.ok(r.rc == 0 and names == ['fault_4k_first_write',
                                 'fault_2m_first_write', 'flush_fence_64b',
                                 'nt_write_bandwidth',
                                 'store_flush_bandwidth'],
         'bench --json: the five metrics', r)
    t.ok(all(x['samples'] > 0 for x in rows) and
         rows and rows[3]['bytes_per_second'] > 0,
         'bench --json: every metric measured', r)
    r = guest('bench', '--dir', d, '--size', '8M', '--allow-non-dax')
    t.ok(one_line(r, 1) and '40M' in r.err,
         'bench with too small a size: one-line error', r)


def main():
    t = daxtest.Tap()
    t.plan(39)
    t.subtest('usage', test_usage, t)
    t.subtest('check', test_check, t)
    with daxtest.tempdir('daxfile-guest-cli.') as d:
        t.subtest('pattern', test_pattern, t, d)
    with daxtest.tempdir('daxfile-guest-cli.') as d:
        t.subtest('bench', test_bench, t, d)
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
