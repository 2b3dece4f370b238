//! File-system image benchmark: how long `--fs` takes to make a tree's image,
//! fill it and mount it, against building the same tree on the temp folder's own
//! file system, side by side in one run (target: at most 2× the native build).
//! Each round builds `nm` (about 60,000 entries; `EQCHECK_BENCH_TREE` names
//! another) natively and onto every file system this machine can make, in an
//! order that rotates from round to round, and takes them all down, untimed,
//! once every build is timed: room for rounds × file systems of the tree, on disk
//! (images are sparse) and, for tmpfs and a squashfs stage, in memory.
//! It runs inside a private mount namespace, so nothing it mounts outlives it.
//! A plain program run by `cargo bench --bench images` as root on Linux; it
//! prints and never asserts, because timings depend on the host.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Instant;

use eqcheck::bench::stats::spread;
use eqcheck::fixtures::{build_temp, spec_named};
use eqcheck::fsimage::{self, FileSystem, OnImage};

#[path = "rounds.rs"]
mod rounds;

/// The target: an image's build at most this many times the native one.
const TARGET_RATIO: f64 = 2.0;

fn main() -> ExitCode {
    if let Some(refused) = fsimage::images_refused() {
        eprintln!("images bench: {refused}");
        return ExitCode::FAILURE;
    }
    if let Err(err) = fsimage::enter_private_namespace() {
        eprintln!("images bench: {err}");
        return ExitCode::FAILURE;
    }
    let tree = std::env::var("EQCHECK_BENCH_TREE").unwrap_or_else(|_| "nm".into());
    let spec = match spec_named(&tree) {
        Ok(spec) => spec,
        Err(err) => {
            eprintln!("images bench: {err}");
            return ExitCode::FAILURE;
        }
    };
    let mut kinds: Vec<FileSystem> = (FileSystem::ALL.into_iter())
        .filter(|fs| fs.of_this_platform())
        .filter(|&fs| match fsimage::unavailable(fs) {
            None => true,
            Some(reason) => {
                println!("{fs}: left out: {reason}");
                false
            }
        })
        .collect();
    let rounds = rounds::rounds(3);
    println!("tree {tree}; {rounds} rounds, the order rotating; medians of wall seconds");
    let mut seconds: BTreeMap<FileSystem, Vec<f64>> = BTreeMap::new();
    let scratch = tempfile::Builder::new().prefix("eqc-bench-").tempdir();
    let Ok(scratch) = scratch else {
        eprintln!("images bench: cannot make a scratch folder");
        return ExitCode::FAILURE;
    };
    // Nothing is taken down until every build is timed: see `time_one`.
    let mut built = Vec::new();
    for round in 0..rounds {
        kinds.rotate_left(usize::from(round > 0));
        for &fs in &kinds {
            let dir = scratch.path().join(format!("{round}-{fs}"));
            match time_one(fs, &spec, &dir) {
                Ok((secs, tree)) => {
                    seconds.entry(fs).or_default().push(secs);
                    built.push(tree);
                }
                Err(err) => {
                    eprintln!("images bench: {fs}: {err}");
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    for tree in built {
        if let Built::Image(image) = tree {
            if let Err(err) = image.take_down() {
                eprintln!("images bench: {err}");
            }
        }
    }
    report(&seconds)
}

/// A timed build, held until the end.
enum Built {
    // Removed when dropped.
    Native(#[allow(dead_code)] eqcheck::fixtures::BuiltTree),
    Image(OnImage),
}

/// Seconds to have `spec` ready on `fs` (built natively, for `native`), and the
/// build, which the caller takes down once every build is timed. Each build
/// starts on a quiet disk: what the one before left to write back is flushed
/// first, untimed. And no tree is removed in between: ext4 without a journal
/// (as a VM's root disk may be) will not reuse an inode for 30 s to 3 min after
/// it is freed, and scans past every such inode for each one it hands out, so
/// building `nm` right after removing one took 45 s in the temp folder against
/// 1.2 s on a quiet disk.
fn time_one(
    fs: FileSystem,
    spec: &eqcheck::fixtures::TreeSpec,
    dir: &std::path::Path,
) -> Result<(f64, Built), String> {
    rustix::fs::sync();
    let started = Instant::now();
    if fs == FileSystem::Native {
        let tree = build_temp(spec).map_err(|e| e.to_string())?;
        return Ok((started.elapsed().as_secs_f64(), Built::Native(tree)));
    }
    let image = OnImage::build(fs, spec, dir).map_err(|e| e.to_string())?;
    Ok((started.elapsed().as_secs_f64(), Built::Image(image)))
}

/// The table: each file system against the native build, and against a fresh
/// ext4 image, a quiet disk of the kind most temp folders are on, which a temp
/// folder that has just freed many inodes is not (see `time_one`).
fn report(seconds: &BTreeMap<FileSystem, Vec<f64>>) -> ExitCode {
    let Some(native) = seconds.get(&FileSystem::Native).and_then(|s| spread(s)) else {
        eprintln!("images bench: no native build was timed");
        return ExitCode::FAILURE;
    };
    let quiet = seconds.get(&FileSystem::Ext4).and_then(|s| spread(s));
    println!(
        "{:<14} {:>9} {:>9} {:>9} {:>10} {:>10}",
        "file system", "median s", "min s", "max s", "/native", "/ext4 img"
    );
    for (fs, times) in seconds {
        let Some(s) = spread(times) else { continue };
        let ratio = s.median / native.median;
        let against_quiet = quiet.as_ref().map(|q| s.median / q.median);
        let over = *fs != FileSystem::Native
            && [Some(ratio), against_quiet]
                .into_iter()
                .flatten()
                .any(|r| r > TARGET_RATIO);
        let mark = if over { "  over the 2x target" } else { "" };
        let quiet_cell = against_quiet.map_or("-".to_string(), |r| format!("{r:.2}x"));
        println!(
            "{:<14} {:>9.3} {:>9.3} {:>9.3} {:>9.2}x {:>10}{mark}",
            fs.name(),
            s.median,
            s.min,
            s.max,
            ratio,
            quiet_cell
        );
    }
    ExitCode::SUCCESS
}
