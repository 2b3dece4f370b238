//! The test double's seccomp filter (Linux): a classic-BPF program that makes
//! `statx` fail with a chosen errno and lets every other call through, as an old
//! kernel (ENOSYS) or an old container profile (EPERM) does. `eqcheck-double
//! no-statx` installs it and then becomes the program it runs, so the fast
//! engine's fallback to `fstatat` is tested against the real thing.

use libc::{sock_filter, BPF_ABS, BPF_JEQ, BPF_JMP, BPF_K, BPF_LD, BPF_RET, BPF_W};

/// `AUDIT_ARCH_*` from linux/audit.h (not in libc): the ELF machine, 64-bit,
/// little-endian.
const AUDIT_ARCH_X86_64: u32 = 62 | 0x8000_0000 | 0x4000_0000;
const AUDIT_ARCH_AARCH64: u32 = 183 | 0x8000_0000 | 0x4000_0000;
/// `statx`'s number on each (x32 calls, numbered from 0x4000_0000, are let
/// through: nothing here is built for x32).
const STATX_X86_64: u32 = 332;
const STATX_AARCH64: u32 = 291;

fn load(offset: usize) -> sock_filter {
    let code = (BPF_LD | BPF_W | BPF_ABS) as u16;
    sock_filter {
        code,
        jt: 0,
        jf: 0,
        k: offset as u32,
    }
}

fn jump_if_equal(k: u32, jt: u8, jf: u8) -> sock_filter {
    let code = (BPF_JMP | BPF_JEQ | BPF_K) as u16;
    sock_filter { code, jt, jf, k }
}

fn ret(k: u32) -> sock_filter {
    sock_filter {
        code: (BPF_RET | BPF_K) as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

/// The program: on each architecture it knows, the call number decides; on
/// any other, everything is allowed. Jumps count the instructions skipped.
fn program(errno: u16) -> [sock_filter; 9] {
    let arch = std::mem::offset_of!(libc::seccomp_data, arch);
    let nr = std::mem::offset_of!(libc::seccomp_data, nr);
    [
        load(arch),
        jump_if_equal(AUDIT_ARCH_X86_64, 0, 2), // else to the aarch64 test
        load(nr),
        jump_if_equal(STATX_X86_64, 4, 3), // to refuse, else to allow
        jump_if_equal(AUDIT_ARCH_AARCH64, 0, 2), // the arch is still loaded
        load(nr),
        jump_if_equal(STATX_AARCH64, 1, 0),
        ret(libc::SECCOMP_RET_ALLOW),
        ret(libc::SECCOMP_RET_ERRNO | u32::from(errno)),
    ]
}

/// Installs the filter on this process; it is kept across `exec` and by
/// every thread started after.
pub fn refuse_statx(errno: u16) -> std::io::Result<()> {
    let filter = program(errno);
    let fprog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr().cast_mut(),
    };
    let (one, zero): (libc::c_ulong, libc::c_ulong) = (1, 0);
    // SAFETY: PR_SET_NO_NEW_PRIVS takes integers only and sets a flag of this
    // process; without it an unprivileged process may not install a filter.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, one, zero, zero, zero) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let (mode, fprog) = (
        libc::c_ulong::from(libc::SECCOMP_MODE_FILTER),
        &raw const fprog,
    );
    // SAFETY: `fprog` points at a `sock_fprog` that points at `filter`; both
    // outlive the call, and the kernel copies the program before it returns.
    if unsafe { libc::prctl(libc::PR_SET_SECCOMP, mode, fprog) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
