//! GNU du's accounting and output over a listed tree.
//!
//! The visit runs serially in the order the OS listed each folder, so a hard-linked
//! file is counted at the first place a depth-first walk meets it, as du counts it,
//! whichever engine listed the tree and however many threads it used. What is
//! counted once follows du 9: files with more than one link always; folders too when
//! there is more than one operand; every entry with `-L`. On Windows every file is
//! counted once by file id, since listings give no link count. Output lines then come
//! post-order with children sorted by name bytes, and error messages sorted by path,
//! so two engines over one on-disk tree print the same bytes.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::io::{self, Write};

use super::quote::quote;
use super::stat::{os_message, FileKind, StatFields};
use super::{Contents, Entry, Identity, StatError, Summed};

/// On Windows every file is counted once by its file id, whatever its link count:
/// no directory listing gives the count, so an engine that never opens files could
/// not count as du does, and two names with one id on a volume are hard links of
/// one file there. (Under Wine a Unix symlink is listed as its target, with the
/// target's id: it is counted once too.)
const BY_FILE_ID: bool = cfg!(windows);

/// What a size line counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Unit {
    /// Disk usage (`st_blocks`), printed in 1024-byte blocks rounded up.
    #[default]
    DiskBlocks,
    /// `--apparent-size`: bytes, printed in 1024-byte blocks rounded up.
    ApparentBlocks,
    /// `-b`: apparent bytes, printed as they are.
    ApparentBytes,
    /// `--inodes`: entries counted.
    Inodes,
}

/// The flags that shape accounting and output.
#[derive(Debug, Clone, Copy, Default)]
pub struct DuOptions {
    pub unit: Unit,
    /// `-a`: print files as well as folders.
    pub all: bool,
    /// `-d N` (`-s` is depth 0): print nothing deeper than this.
    pub max_depth: Option<usize>,
    /// `-c`: a final `total` line.
    pub total: bool,
    /// `-0`: end lines with NUL instead of newline.
    pub null: bool,
    /// `-L`: count every entry once by identity.
    pub follow_symlinks: bool,
    /// `-x`: leave out entries on another device than their operand.
    pub one_file_system: bool,
}

/// One counted entry with its total and the counted children that are printed
/// (nothing below the maximum depth is, nor a file without `-a`). Names are borrowed
/// from the listing and paths are put together only when printed, so a deep tree
/// costs memory in proportion to its entries, not to the sum of its path lengths.
#[derive(Debug)]
pub struct Node<'a> {
    /// The entry's own name; for an operand, the operand as printed.
    pub name: Cow<'a, OsStr>,
    pub is_dir: bool,
    pub depth: usize,
    /// Bytes, 512-byte-block bytes or entries, according to the unit.
    pub amount: u64,
    pub children: Vec<Node<'a>>,
}

/// The result of accounting: counted roots and du-style error messages.
#[derive(Debug, Default)]
pub struct Accounted<'a> {
    pub roots: Vec<Node<'a>>,
    /// Messages without the program prefix, e.g. `cannot read directory 'r/x': Permission denied`,
    /// with the path they are about, by which they are sorted.
    pub errors: Vec<(OsString, String)>,
}

impl Accounted<'_> {
    pub fn grand_total(&self) -> u64 {
        self.roots.iter().map(|r| r.amount).sum()
    }
}

/// Visits the listed operands in the OS's order and counts them as du does.
pub fn account<'a>(operands: &'a [Entry], options: &DuOptions) -> Accounted<'a> {
    let mut listed_elsewhere = HashMap::new();
    if options.follow_symlinks {
        for root in operands {
            index_listings(root, &mut listed_elsewhere);
        }
    }
    let mut visit = Visit {
        options,
        count_dirs_once: options.follow_symlinks || operands.len() > 1,
        seen: HashSet::new(),
        listings: listed_elsewhere,
        path: Vec::new(),
        out: Accounted::default(),
    };
    for root in operands {
        let root_dev = root.stat.as_ref().ok().and_then(|s| s.dev).map(|d| d.value);
        let name = Cow::Borrowed(display_root(&root.name));
        if let Some(node) = visit.entry(root, name, 0, root_dev) {
            visit.out.roots.push(node);
        }
    }
    visit
        .out
        .errors
        .sort_by(|a, b| a.0.as_encoded_bytes().cmp(b.0.as_encoded_bytes()));
    visit.out
}

/// A folder's listing: its entries, the error that cut it short, if any, and the
/// figures of the files the walk summed instead of keeping.
type Listing<'a> = (&'a [Entry], Option<&'a io::Error>, Summed);

/// Where each folder's listing is, by identity, for `Contents::Elsewhere`. The
/// error goes with the entries: the place that counts a folder reports its error,
/// wherever the engine happened to list it.
fn index_listings<'a>(entry: &'a Entry, index: &mut HashMap<Identity, Listing<'a>>) {
    if let Contents::Listed {
        entries,
        error,
        summed,
    } = &entry.contents
    {
        if let Some(id) = entry.stat.as_ref().ok().and_then(StatFields::identity) {
            index.insert(id, (entries, error.as_ref(), *summed));
        }
        for child in entries {
            index_listings(child, index);
        }
    }
}

struct Visit<'a, 'o> {
    options: &'o DuOptions,
    count_dirs_once: bool,
    seen: HashSet<Identity>,
    listings: HashMap<Identity, Listing<'a>>,
    /// The names from the operand down to the entry being visited.
    path: Vec<Cow<'a, OsStr>>,
    out: Accounted<'a>,
}

impl<'a> Visit<'a, '_> {
    fn entry(
        &mut self,
        entry: &'a Entry,
        name: Cow<'a, OsStr>,
        depth: usize,
        root_dev: Option<u64>,
    ) -> Option<Node<'a>> {
        self.path.push(name);
        let node = self.counted(entry, depth, root_dev);
        let name = self.path.pop().expect("pushed above");
        node.map(|(is_dir, amount, children)| Node {
            name,
            is_dir,
            depth,
            amount,
            children,
        })
    }

    /// Counts the entry at the end of `self.path`: whether it is a folder, its total
    /// and its counted children, or nothing when it is not counted.
    fn counted(
        &mut self,
        entry: &'a Entry,
        depth: usize,
        root_dev: Option<u64>,
    ) -> Option<(bool, u64, Vec<Node<'a>>)> {
        let stat = match &entry.stat {
            Ok(stat) => stat,
            Err(err) => {
                self.cannot_access(err);
                return None;
            }
        };
        // An operand is on its own device: only what is below one can be left out.
        if self.options.one_file_system {
            if let (Some(root), Some(dev)) = (root_dev, stat.dev) {
                if root != dev.value {
                    return None;
                }
            }
        }
        let is_dir = stat.kind == FileKind::Dir;
        let count_once = if is_dir {
            self.count_dirs_once
        } else {
            self.options.follow_symlinks || BY_FILE_ID || stat.may_have_other_links()
        };
        let id = stat.identity();
        if count_once {
            if let Some(id) = id {
                if !self.seen.insert(id) {
                    return None;
                }
            }
        }
        let (entries, error, summed): Listing<'a> = match &entry.contents {
            Contents::None => (&[], None, Summed::default()),
            Contents::Listed {
                entries,
                error,
                summed,
            } => (entries, error.as_ref(), *summed),
            Contents::Elsewhere => id
                .and_then(|id| self.listings.get(&id).copied())
                .unwrap_or((&[], None, Summed::default())),
        };
        let mut amount =
            amount_of(stat, self.options.unit) + summed_amount(&summed, self.options.unit);
        // Only what can be printed is kept: the rest is summed into `amount` and
        // dropped, so `-s` holds one node, not one per entry of the tree.
        let mut children = Vec::new();
        for child in entries {
            if let Some(counted) = self.entry(
                child,
                Cow::Borrowed(child.name.as_os_str()),
                depth + 1,
                root_dev,
            ) {
                amount += counted.amount;
                if is_printed(&counted, self.options) {
                    children.push(counted);
                }
            }
        }
        if let Some(err) = error {
            self.cannot_read(err);
        }
        Some((is_dir, amount, children))
    }

    // The two messages are built out of line: inlined, their formatting widened the
    // frame of every level of the recursion, and a chain's count faulted in that
    // much more fresh stack.
    #[cold]
    #[inline(never)]
    fn cannot_access(&mut self, err: &StatError) {
        let path = join_path(&self.path);
        let message = match err {
            StatError::DanglingLink => format!("cannot access {}", quote(&path)),
            StatError::Io(err) => format!("cannot access {}: {}", quote(&path), os_message(err)),
        };
        self.out.errors.push((path, message));
    }

    #[cold]
    #[inline(never)]
    fn cannot_read(&mut self, err: &io::Error) {
        let path = join_path(&self.path);
        let message = format!(
            "cannot read directory {}: {}",
            quote(&path),
            os_message(err)
        );
        self.out.errors.push((path, message));
    }
}

/// What one entry adds, in the unit's measure.
fn amount_of(stat: &StatFields, unit: Unit) -> u64 {
    match unit {
        Unit::Inodes => 1,
        Unit::ApparentBlocks | Unit::ApparentBytes => stat.size.map_or(0, |s| s.value),
        // Where the platform cannot say what is allocated, apparent size is the best
        // estimate there is; on Unix both engines always know st_blocks.
        Unit::DiskBlocks => match stat.blocks {
            Some(blocks) => blocks.value * 512,
            None => stat.size.map_or(0, |s| s.value),
        },
    }
}

/// What the files summed in a listing add, in the unit's measure: each of them had
/// its size and blocks known.
fn summed_amount(summed: &Summed, unit: Unit) -> u64 {
    match unit {
        Unit::Inodes => summed.files,
        Unit::ApparentBlocks | Unit::ApparentBytes => summed.size,
        Unit::DiskBlocks => summed.blocks * 512,
    }
}

/// An operand as du prints it: trailing slashes folded into one.
fn display_root(operand: &OsStr) -> &OsStr {
    let bytes = operand.as_encoded_bytes();
    let slashes = bytes.iter().rev().take_while(|&&b| b == b'/').count();
    let kept = &bytes[..bytes.len() - slashes.saturating_sub(1)];
    // SAFETY: `kept` came from `as_encoded_bytes` and is whole or cut right after an
    // ASCII '/', where such bytes may be split.
    unsafe { OsStr::from_encoded_bytes_unchecked(kept) }
}

/// The path of the names from an operand down, without doubling a slash the
/// operand already ends with.
fn join_path<N: AsRef<OsStr>>(names: &[N]) -> OsString {
    let mut path = OsString::new();
    for (i, name) in names.iter().enumerate() {
        if i > 0 && !path.as_encoded_bytes().ends_with(b"/") {
            path.push("/");
        }
        path.push(name.as_ref());
    }
    path
}

/// The number a line prints for an amount.
pub fn shown(amount: u64, unit: Unit) -> u64 {
    match unit {
        Unit::DiskBlocks | Unit::ApparentBlocks => amount.div_ceil(1024),
        Unit::ApparentBytes | Unit::Inodes => amount,
    }
}

/// Writes du's lines: post-order, siblings sorted by name bytes.
pub fn write_text(
    accounted: &Accounted,
    options: &DuOptions,
    out: &mut dyn Write,
) -> io::Result<()> {
    let end: &[u8] = if options.null { b"\0" } else { b"\n" };
    let mut path = Vec::new();
    for root in &accounted.roots {
        write_node(root, options, end, &mut path, out)?;
    }
    if options.total {
        write!(
            out,
            "{}\ttotal",
            shown(accounted.grand_total(), options.unit)
        )?;
        out.write_all(end)?;
    }
    Ok(())
}

/// `path` holds the bytes of the node's parent path; each level appends its own
/// name and truncates it again, so a deep chain costs no quadratic joining.
fn write_node(
    node: &Node,
    options: &DuOptions,
    end: &[u8],
    path: &mut Vec<u8>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let parent_len = path.len();
    if parent_len > 0 && !path.ends_with(b"/") {
        path.push(b'/');
    }
    path.extend_from_slice(node.name.as_encoded_bytes());
    // Only printed children were kept (see `Visit::counted`).
    for child in sorted(&node.children) {
        write_node(child, options, end, path, out)?;
    }
    if is_printed(node, options) {
        write!(out, "{}\t", shown(node.amount, options.unit))?;
        out.write_all(path)?;
        out.write_all(end)?;
    }
    path.truncate(parent_len);
    Ok(())
}

fn is_printed(node: &Node, options: &DuOptions) -> bool {
    let shallow_enough = options.max_depth.is_none_or(|max| node.depth <= max);
    shallow_enough && (node.is_dir || options.all || node.depth == 0)
}

fn sorted<'n, 'a>(children: &'n [Node<'a>]) -> Vec<&'n Node<'a>> {
    let mut list: Vec<&Node> = children.iter().collect();
    list.sort_by(|a, b| a.name.as_encoded_bytes().cmp(b.name.as_encoded_bytes()));
    list
}

/// The nested `--json` form: `{"name", "size", "children"}` per printed entry, in the
/// same order and with the same depth and `-a` rules as the text form.
pub fn to_json(accounted: &Accounted, options: &DuOptions) -> serde_json::Value {
    let mut path = Vec::new();
    let roots: Vec<serde_json::Value> = accounted
        .roots
        .iter()
        .filter(|r| is_printed(r, options))
        .map(|r| node_json(r, options, &mut path))
        .collect();
    let unit = match options.unit {
        Unit::DiskBlocks => "disk-1k-blocks",
        Unit::ApparentBlocks => "apparent-1k-blocks",
        Unit::ApparentBytes => "apparent-bytes",
        Unit::Inodes => "inodes",
    };
    let mut doc = serde_json::json!({ "version": 1, "unit": unit, "roots": roots });
    if options.total {
        doc["total"] = shown(accounted.grand_total(), options.unit).into();
    }
    doc
}

fn node_json<'n>(
    node: &'n Node,
    options: &DuOptions,
    path: &mut Vec<&'n OsStr>,
) -> serde_json::Value {
    path.push(&node.name);
    let full = join_path(path);
    let mut value = serde_json::json!({
        "name": full.to_string_lossy(),
        "size": shown(node.amount, options.unit),
    });
    if full.to_str().is_none() {
        value["name_bytes"] = full.as_encoded_bytes().to_vec().into();
    }
    if node.is_dir {
        let children: Vec<serde_json::Value> = sorted(&node.children)
            .into_iter()
            .filter(|c| is_printed(c, options))
            .map(|c| node_json(c, options, path))
            .collect();
        value["children"] = children.into();
    }
    path.pop();
    value
}

/// Writes the error messages with a program prefix, one per line.
pub fn write_errors(accounted: &Accounted, prefix: &str, out: &mut dyn Write) -> io::Result<()> {
    for (_, message) in &accounted.errors {
        writeln!(out, "{prefix}: {message}")?;
    }
    Ok(())
}

/// What `eqcheck walk -a` prints for these entries, its errors after its lines, in
/// this unit: how an engine's tests hold its walk to the reference's.
#[cfg(test)]
pub(crate) fn printed(entries: &[super::Entry], unit: Unit, options: super::ListOptions) -> String {
    let du_options = DuOptions {
        unit,
        all: true,
        follow_symlinks: options.follow_symlinks,
        one_file_system: options.one_file_system,
        ..DuOptions::default()
    };
    let accounted = account(entries, &du_options);
    let mut out = Vec::new();
    write_text(&accounted, &du_options, &mut out).expect("writing to memory");
    write_errors(&accounted, "walk", &mut out).expect("writing to memory");
    String::from_utf8_lossy(&out).into_owned()
}

// Unix only: on Windows every file is counted once by its id (`BY_FILE_ID`), which
// the trees these tests make in memory do not expect.
#[cfg(all(test, unix))]
mod tests;
