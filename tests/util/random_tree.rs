//! A seeded random tree for the walk tests: the same seed makes the same names,
//! sizes and links on every run, and every tree holds the entries walkers get wrong
//! (hard links across folders, symlinks to nothing and to `..`, awkward names).

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::temp_dir;

/// Sizes a walker gets wrong first: empty, one byte, and around a 4 KiB block.
const EDGE_SIZES: &[u64] = &[0, 1, 4095, 4096, 4097];

/// A seeded random tree in a fresh 0755 temp folder: nested folders (the first at
/// the root), files of edge and varied sizes (one sparse), hard links across folders
/// (some with three names), symlinks to files, to folders and to nothing, `up -> ..`
/// in a subfolder, hidden files, names with spaces, quotes and non-ASCII UTF-8; even
/// seeds add a `wide` folder of more than 1024 entries (the fast engine chunks those)
/// and seeds ≡ 1 (mod 3) a self-loop `self -> self`. The same seed gives the same
/// names, sizes and links on every run.
pub fn random_tree(seed: u64) -> tempfile::TempDir {
    let dir = temp_dir();
    let mut tree = RandomTree {
        rng: fastrand::Rng::with_seed(seed),
        root: dir.path().to_path_buf(),
        dirs: vec![PathBuf::new()],
        files: Vec::new(),
        made: 0,
    };
    tree.build(seed)
        .unwrap_or_else(|e| panic!("random tree {seed} in {}: {e}", dir.path().display()));
    dir
}

struct RandomTree {
    rng: fastrand::Rng,
    root: PathBuf,
    /// Folders made, relative to the root (the root is the empty path).
    dirs: Vec<PathBuf>,
    /// Regular files made, relative to the root.
    files: Vec<PathBuf>,
    /// Names made so far, which keeps every name unique.
    made: usize,
}

impl RandomTree {
    fn build(&mut self, seed: u64) -> io::Result<()> {
        for _ in 0..self.rng.usize(6..14) {
            // The first pick can only be the root: every tree has a top-level folder.
            let parent = self.pick_dir(|d| d.components().count() < 5);
            let rel = parent.join(self.name("d"));
            fs::create_dir(self.root.join(&rel))?;
            self.dirs.push(rel);
        }
        for &size in EDGE_SIZES {
            let dir = self.pick_dir(|_| true);
            self.file(&dir, size)?;
        }
        for _ in 0..self.rng.usize(15..40) {
            let dir = self.pick_dir(|_| true);
            let size = match self.rng.u8(..10) {
                0..=5 => self.rng.u64(0..9000),
                6..=8 => EDGE_SIZES[self.rng.usize(..EDGE_SIZES.len())],
                _ => self.rng.u64(100_000..700_000),
            };
            self.file(&dir, size)?;
        }
        let dir = self.pick_dir(|_| true);
        let hidden = dir.join(format!(".hidden-{}", self.made));
        self.write(&hidden, 300)?;
        let sparse = self.pick_dir(|_| true).join(self.name("sparse"));
        fs::File::create(self.root.join(&sparse))?.set_len(3 << 20)?;
        self.files.push(sparse);
        self.hard_links()?;
        self.symlinks(seed)?;
        if seed % 2 == 0 {
            self.wide()?;
        }
        Ok(())
    }

    /// A unique name: plain, with spaces, hidden, non-ASCII or with a quote.
    fn name(&mut self, stem: &str) -> String {
        self.made += 1;
        let n = self.made;
        match self.rng.u8(..7) {
            0 | 1 => format!("{stem}{n}"),
            2 => format!("{stem} {n} with spaces"),
            3 => format!(".{stem}{n}"),
            4 => format!("{stem}-café-{n}"),
            5 => format!("{stem}'s-ü {n}"),
            _ => format!("{stem}-日本語 {n}"),
        }
    }

    fn pick_dir(&mut self, fits: impl Fn(&Path) -> bool) -> PathBuf {
        let fitting: Vec<&PathBuf> = self.dirs.iter().filter(|d| fits(d)).collect();
        fitting[self.rng.usize(..fitting.len())].clone()
    }

    fn file(&mut self, dir: &Path, size: u64) -> io::Result<()> {
        let rel = dir.join(self.name("f"));
        self.write(&rel, size)
    }

    /// Random bytes for small files, zeros (still allocated) for large ones.
    fn write(&mut self, rel: &Path, size: u64) -> io::Result<()> {
        let mut bytes = vec![0u8; size as usize];
        if size < 16_384 {
            self.rng.fill(&mut bytes);
        }
        fs::File::create(self.root.join(rel))?.write_all(&bytes)?;
        self.files.push(rel.to_path_buf());
        Ok(())
    }

    /// Second names in other folders; the first two files get a third name.
    fn hard_links(&mut self) -> io::Result<()> {
        for i in 0..self.rng.usize(3..7) {
            let target = self.files[self.rng.usize(..self.files.len())].clone();
            for _ in 0..1 + usize::from(i < 2) {
                let parent = target.parent().unwrap_or(Path::new("")).to_path_buf();
                let dir = self.pick_dir(|d| d != parent);
                let link = dir.join(self.name("hl"));
                fs::hard_link(self.root.join(&target), self.root.join(link))?;
            }
        }
        Ok(())
    }

    fn symlinks(&mut self, seed: u64) -> io::Result<()> {
        for _ in 0..3 {
            let target = self.files[self.rng.usize(..self.files.len())].clone();
            self.symlink_to(&target, "ln-file")?;
        }
        for _ in 0..2 {
            let target = self.pick_dir(|d| d.components().count() > 0);
            self.symlink_to(&target, "ln-dir")?;
        }
        for _ in 0..2 {
            let dir = self.pick_dir(|_| true);
            let link = dir.join(self.name("ln-nothing"));
            std::os::unix::fs::symlink("no/such/place", self.root.join(link))?;
        }
        let dir = self.pick_dir(|d| d.components().count() > 0);
        std::os::unix::fs::symlink("..", self.root.join(dir.join("up")))?;
        if seed % 3 == 1 {
            let dir = self.pick_dir(|_| true);
            std::os::unix::fs::symlink("self", self.root.join(dir.join("self")))?;
        }
        Ok(())
    }

    /// A symlink in a random folder to `target`, written relative to the link.
    fn symlink_to(&mut self, target: &Path, stem: &str) -> io::Result<()> {
        let dir = self.pick_dir(|_| true);
        let up: PathBuf = dir.components().map(|_| "..").collect();
        let relative = up.join(target);
        let link = dir.join(self.name(stem));
        std::os::unix::fs::symlink(relative, self.root.join(link))
    }

    /// More than 1024 entries in one folder: mostly empty files, some with content,
    /// a few subfolders, hard links to files elsewhere and a symlink.
    fn wide(&mut self) -> io::Result<()> {
        let wide = PathBuf::from("wide");
        fs::create_dir(self.root.join(&wide))?;
        let count = 1025 + self.rng.usize(0..700);
        for i in 0..count {
            let rel = wide.join(format!("w-{i:05}{}", if i % 7 == 0 { "-é" } else { "" }));
            match i % 97 {
                0 => {
                    let size = self.rng.u64(1..6000);
                    self.write(&rel, size)?;
                }
                1 => {
                    fs::create_dir(self.root.join(&rel))?;
                    self.write(&rel.join("inner"), 5000)?;
                }
                2 => {
                    let target = self.files[self.rng.usize(..self.files.len())].clone();
                    fs::hard_link(self.root.join(target), self.root.join(&rel))?;
                }
                3 => std::os::unix::fs::symlink("w-00002", self.root.join(&rel))?,
                _ => drop(fs::File::create(self.root.join(&rel))?),
            }
        }
        self.dirs.push(wide);
        Ok(())
    }
}
