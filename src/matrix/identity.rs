//! What exactly an arm ran, and how, for the reports: the program's file (path,
//! size, sha256), the architecture its ELF, Mach-O or PE header names (read with
//! the `object` crate), the first line its `--version` prints, and whether it ran
//! natively or translated (under a runner, by Rosetta 2, or built for another
//! architecture than this machine's); and the machine itself (OS, kernel,
//! architecture). Emulators have bugs of their own, so a report must say this.

use std::ffi::OsString;
use std::io::Read;
use std::path::Path;
use std::time::Duration;

use object::read::macho::FatArch;
use object::Object;

use super::arm::Arm;
use super::keeper::{Launcher, Request};
use crate::outcome::ArmStatus;
use crate::outcome::Host;

/// The longest `--version` may take; the arm's own timeout when shorter.
const VERSION_TIMEOUT: Duration = Duration::from_secs(10);
/// The most a `--version` run may print.
const VERSION_OUTPUT: u64 = 1 << 20;

/// A program file as the reports name it, read once: its size, its sha256 and the
/// architecture its header names.
pub struct ProgramFile {
    pub size: u64,
    pub sha256: String,
    pub architecture: Option<String>,
}

/// The program file at `program`, if it can be read.
pub fn program_file(program: &Path) -> Option<ProgramFile> {
    use sha2::{Digest, Sha256};
    let data = std::fs::read(program).ok()?;
    let digest = Sha256::digest(&data);
    Some(ProgramFile {
        size: data.len() as u64,
        sha256: digest.iter().map(|b| format!("{b:02x}")).collect(),
        architecture: architecture_of(&data),
    })
}

/// The architecture a program file's bytes are built for, as its header names it;
/// a universal Mach-O names each of its slices (`universal: x86_64, aarch64`).
pub fn architecture_of(data: &[u8]) -> Option<String> {
    let arches: Vec<object::Architecture> = match object::FileKind::parse(data).ok()? {
        object::FileKind::MachOFat32 => fat_arches::<object::macho::FatArch32>(data)?,
        object::FileKind::MachOFat64 => fat_arches::<object::macho::FatArch64>(data)?,
        _ => vec![object::File::parse(data).ok()?.architecture()],
    };
    let names: Vec<&str> = arches.into_iter().map(name).collect();
    match names.as_slice() {
        [one] => Some(one.to_string()),
        _ => Some(format!("universal: {}", names.join(", "))),
    }
}

fn fat_arches<Fat: FatArch>(data: &[u8]) -> Option<Vec<object::Architecture>> {
    let fat = object::read::macho::MachOFatFile::<Fat>::parse(data).ok()?;
    Some(
        fat.arches()
            .iter()
            .map(|arch| arch.architecture())
            .collect(),
    )
}

/// An architecture as Rust's target names spell it (`std::env::consts::ARCH`).
fn name(arch: object::Architecture) -> &'static str {
    use object::Architecture as A;
    match arch {
        A::X86_64 | A::X86_64_X32 => "x86_64",
        A::I386 => "x86",
        A::Aarch64 | A::Aarch64_Ilp32 => "aarch64",
        A::Arm => "arm",
        A::Riscv32 => "riscv32",
        A::Riscv64 => "riscv64",
        A::PowerPc => "powerpc",
        A::PowerPc64 => "powerpc64",
        A::S390x => "s390x",
        A::Mips => "mips",
        A::Mips64 | A::Mips64_N32 => "mips64",
        A::LoongArch64 => "loongarch64",
        A::Sparc64 => "sparc64",
        A::Wasm32 => "wasm32",
        _ => "other",
    }
}

/// How an arm ran, in a few words: `native`, `translated (under qemu-aarch64)`,
/// `translated (Rosetta 2)`, or `translated (built for aarch64, this machine is
/// x86_64)`.
pub fn execution(arm: &Arm, architecture: Option<&str>, host: &Host) -> (bool, String) {
    if let Some(runner) = &arm.runner {
        let name = super::arm::file_name(&runner.command[0]);
        return (true, format!("translated (under {name})"));
    }
    let foreign = architecture.is_some_and(|arch| {
        !arch
            .split([':', ',', ' '])
            .any(|part| part == host.architecture || runs_natively(part, &host.architecture))
    });
    match (foreign, cfg!(target_os = "macos")) {
        // A binary only for x86_64 on an Apple silicon Mac runs under Rosetta 2.
        (true, true) if host.architecture == "aarch64" => (true, "translated (Rosetta 2)".into()),
        (true, _) => (
            true,
            format!(
                "translated (built for {}, this machine is {})",
                architecture.unwrap_or("?"),
                host.architecture
            ),
        ),
        (false, _) if host.translated => (
            true,
            "translated (eqcheck itself runs under Rosetta 2)".into(),
        ),
        (false, _) => (false, "native".into()),
    }
}

/// Whether the host's processor runs this architecture's code itself: 32-bit x86
/// on x86_64, as it runs 32-bit Arm on some aarch64 machines, is native, not
/// emulated.
fn runs_natively(arch: &str, host: &str) -> bool {
    matches!((arch, host), ("x86", "x86_64") | ("arm", "aarch64"))
}

/// The first line the program prints for `--version` (under its runner), if it
/// prints one and exits 0 within the timeout; never part of the comparison. It
/// runs as eqcheck's user, with its environment, started by the keeper like any
/// arm's run, so what it starts ends with it. It runs in `dir`, where its output
/// goes, as the arms run in folders of their own: eqcheck's own folder may be a
/// tree under comparison, which nothing eqcheck starts may write to.
pub fn version(arm: &Arm, timeout: Duration, launcher: &Launcher, dir: &Path) -> Option<String> {
    let runner = arm
        .runner
        .as_ref()
        .map(|r| r.command.clone())
        .unwrap_or_default();
    let words = runner.into_iter().chain([arm.command.first()?.clone()]);
    let argv: Vec<OsString> = words.chain(["--version".into()]).map(Into::into).collect();
    // Not create_dir_all: after an interrupt removed the run's folder, nothing
    // may make it again.
    if crate::cleanup::interrupted() || std::fs::create_dir(dir).is_err() {
        return None;
    }
    let request = Request {
        argv0: argv[0].to_string_lossy().into_owned(),
        argv,
        env: std::env::vars_os().collect(),
        working_dir: dir.to_path_buf(),
        stdout: dir.join("version.out"),
        stderr: dir.join("version.err"),
        user: None,
        timeout_ms: timeout.min(VERSION_TIMEOUT).as_millis() as u64,
        // A line is all that is read of it.
        max_output: Some(VERSION_OUTPUT),
    };
    let cost = launcher.run(&request, &super::exec::ArmUser::Root);
    if cost.status != (ArmStatus::Exited { code: 0 }) {
        return None;
    }
    let mut start = Vec::new();
    let file = std::fs::File::open(&request.stdout).ok()?;
    file.take(64 * 1024).read_to_end(&mut start).ok()?;
    let line = first_line(&start)?;
    Some(line.chars().take(200).collect())
}

/// The first line of a `--version` output that holds anything, trimmed, its
/// bytes as a report shows a name: a NUL-separated or coloured output can neither
/// put raw control bytes into the reports nor steer a terminal.
fn first_line(output: &[u8]) -> Option<String> {
    let line = (output.split(|&b| b == b'\n'))
        .map(|l| l.trim_ascii())
        .find(|l| !l.is_empty())?;
    Some(crate::fixtures::names::shown(line))
}

/// The machine the run is on.
pub fn host() -> Host {
    Host {
        os: std::env::consts::OS.to_string(),
        kernel: kernel(),
        architecture: std::env::consts::ARCH.to_string(),
        translated: runs_translated(),
    }
}

#[cfg(unix)]
fn kernel() -> Option<String> {
    let uname = rustix::system::uname();
    Some(format!(
        "{} {}",
        uname.sysname().to_string_lossy(),
        uname.release().to_string_lossy()
    ))
}

#[cfg(not(unix))]
fn kernel() -> Option<String> {
    None
}

/// Whether eqcheck itself runs translated: `sysctl.proc_translated` on macOS.
#[cfg(target_os = "macos")]
fn runs_translated() -> bool {
    let mut value: libc::c_int = 0;
    let mut size = std::mem::size_of::<libc::c_int>();
    // SAFETY: the name is NUL-terminated, and value and size describe an int we own.
    let found = unsafe {
        libc::sysctlbyname(
            c"sysctl.proc_translated".as_ptr(),
            (&mut value as *mut libc::c_int).cast(),
            &mut size,
            std::ptr::null_mut(),
            0,
        )
    };
    found == 0 && value == 1
}

#[cfg(not(target_os = "macos"))]
fn runs_translated() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The version line a report shows holds no raw control byte.
    #[test]
    fn a_version_line_shows_control_bytes_escaped() {
        assert_eq!(
            first_line(b"\n  tool 1.2\r\nmore\n").as_deref(),
            Some("tool 1.2")
        );
        assert_eq!(first_line(b"a\0b\0").as_deref(), Some("a\\x00b\\x00"));
        assert_eq!(
            first_line(b"\x1b[1mbold\x1b[0m 2.0").as_deref(),
            Some("\\x1b[1mbold\\x1b[0m 2.0")
        );
        assert_eq!(first_line(b" \n\t\n"), None);
    }

    #[test]
    fn this_very_test_binary_is_built_for_this_machine() {
        let me = std::env::current_exe().unwrap();
        let file = program_file(&me).unwrap();
        assert_eq!(file.architecture.as_deref(), Some(std::env::consts::ARCH));
        assert_eq!(file.size, std::fs::metadata(&me).unwrap().len());
        let digest = crate::matrix::compare::digest_file(&me).unwrap();
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(file.sha256, hex);
        assert_eq!(architecture_of(b"#!/bin/sh\necho hi\n"), None);
        assert_eq!(architecture_of(&[]), None);
    }

    /// A minimal header of each format, as the formats lay them out.
    #[test]
    fn elf_mach_o_and_pe_headers_name_their_architecture() {
        // ELF64, little-endian, EM_AARCH64 (183).
        let mut elf = vec![0u8; 64];
        elf[..4].copy_from_slice(b"\x7fELF");
        (elf[4], elf[5], elf[6]) = (2, 1, 1);
        elf[16] = 2; // ET_EXEC
        elf[18..20].copy_from_slice(&183u16.to_le_bytes());
        elf[20..24].copy_from_slice(&1u32.to_le_bytes());
        elf[52..54].copy_from_slice(&64u16.to_le_bytes()); // e_ehsize
        assert_eq!(architecture_of(&elf).as_deref(), Some("aarch64"));
        // ELF32, EM_386 (3).
        let mut elf32 = vec![0u8; 52];
        elf32[..4].copy_from_slice(b"\x7fELF");
        (elf32[4], elf32[5], elf32[6]) = (1, 1, 1);
        elf32[16] = 2;
        elf32[18..20].copy_from_slice(&3u16.to_le_bytes());
        elf32[20..24].copy_from_slice(&1u32.to_le_bytes());
        elf32[40..42].copy_from_slice(&52u16.to_le_bytes());
        assert_eq!(architecture_of(&elf32).as_deref(), Some("x86"));
        // Mach-O 64, CPU_TYPE_X86_64 (0x01000007), no load commands.
        let mut macho = Vec::new();
        for word in [0xfeed_facfu32, 0x0100_0007, 3, 2, 0, 0, 0, 0] {
            macho.extend(word.to_le_bytes());
        }
        assert_eq!(architecture_of(&macho).as_deref(), Some("x86_64"));
        // PE32+ for AMD64 (0x8664): a DOS header pointing at the PE header.
        let mut pe = vec![0u8; 0x200];
        pe[..2].copy_from_slice(b"MZ");
        pe[0x3c..0x40].copy_from_slice(&0x80u32.to_le_bytes());
        pe[0x80..0x84].copy_from_slice(b"PE\0\0");
        pe[0x84..0x86].copy_from_slice(&0x8664u16.to_le_bytes());
        pe[0x94..0x96].copy_from_slice(&240u16.to_le_bytes()); // optional header size
        pe[0x98..0x9a].copy_from_slice(&0x20bu16.to_le_bytes()); // PE32+ magic
        pe[0x98 + 108..0x98 + 112].copy_from_slice(&16u32.to_le_bytes()); // data dirs
        assert_eq!(architecture_of(&pe).as_deref(), Some("x86_64"));
        // A universal Mach-O (big-endian fat header) with x86_64 and arm64 slices.
        let mut fat = Vec::new();
        for word in [0xcafe_babeu32, 2] {
            fat.extend(word.to_be_bytes());
        }
        for (cpu, sub, offset) in [(0x0100_0007u32, 3u32, 0x1000u32), (0x0100_000c, 0, 0x2000)] {
            for word in [cpu, sub, offset, 0x20, 12] {
                fat.extend(word.to_be_bytes());
            }
        }
        fat.resize(0x2020, 0);
        assert_eq!(
            architecture_of(&fat).as_deref(),
            Some("universal: x86_64, aarch64")
        );
    }

    #[test]
    fn a_foreign_binary_or_a_runner_is_translated() {
        let host = Host {
            os: "linux".into(),
            kernel: None,
            architecture: "x86_64".into(),
            translated: false,
        };
        let arm = |runner: Option<&str>| Arm {
            command: vec!["/b/walker".into()],
            argv0: "walker".into(),
            is_eqcheck: false,
            copied_from: None,
            runner: runner.map(|r| super::super::arm::Runner::new(vec![r.into()])),
            built_from: None,
        };
        assert_eq!(
            execution(&arm(None), Some("x86_64"), &host),
            (false, "native".into())
        );
        assert_eq!(execution(&arm(None), None, &host), (false, "native".into()));
        assert!(execution(&arm(None), Some("aarch64"), &host).0);
        // 32-bit x86 runs on x86_64 as it is.
        assert_eq!(
            execution(&arm(None), Some("x86"), &host),
            (false, "native".into())
        );
        assert!(
            execution(&arm(None), Some("universal: aarch64, x86_64"), &host)
                == (false, "native".into())
        );
        assert_eq!(
            execution(&arm(Some("/usr/bin/qemu-aarch64")), Some("aarch64"), &host),
            (true, "translated (under qemu-aarch64)".into())
        );
    }
}
