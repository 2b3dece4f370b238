//! The chained folder's decisions on listings whose `d_type`s were rewritten,
//! which folders are chained, what opening folders early may skip, and the
//! accounting of chain slots.

use std::sync::atomic::Ordering;

use super::chain::{ChainSlot, FinishedFolder, CHAINED_FOLDERS, CHAIN_BELOW_RUN};
use super::early::EnteredEarly;
use super::stat::stat_open_folder;
use super::*;
use crate::walk::{FileKind, StatFields};
use rustix::fs::FileType;

fn walker() -> Walker {
    Walker {
        options: ListOptions::default(),
        sum_files: false,
        listed_once: Mutex::new(HashSet::new()),
        chained_now: AtomicUsize::new(0),
        census: Counters::default(),
    }
}

/// `sub/inner/f` and a file `g`, listed whole.
fn listed_folder() -> (tempfile::TempDir, OwnedFd, Listing) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("sub/inner")).unwrap();
    std::fs::write(dir.path().join("sub/inner/f"), b"f").unwrap();
    std::fs::write(dir.path().join("g"), b"g").unwrap();
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let fd = rustix::fs::open(dir.path(), flags, Mode::empty()).unwrap();
    let mut listing = first_batch(&fd);
    listing.finish(&fd);
    (dir, fd, listing)
}

fn child<'a>(entries: &'a [Entry], name: &str) -> &'a Entry {
    entries.iter().find(|e| e.name == name).unwrap()
}

fn entries(contents: &Contents) -> &[Entry] {
    match contents {
        Contents::Listed { entries, error, .. } => {
            assert!(error.is_none(), "{error:?}");
            entries
        }
        other => panic!("not listed: {other:?}"),
    }
}

/// A listing's entries and the figures of the files it left out.
fn listed_and_summed(contents: &Contents) -> (&[Entry], &Summed) {
    match contents {
        Contents::Listed {
            entries, summed, ..
        } => (entries, summed),
        other => panic!("not listed: {other:?}"),
    }
}

fn chained(fd: OwnedFd, listing: Listing) -> Contents {
    let walker = walker();
    let slot = ChainSlot::take(&walker.chained_now).expect("a free slot");
    let contents = walker.chain(fd, listing, slot, None, CHAIN_BELOW_RUN);
    assert_eq!(walker.chained_now.load(Ordering::Acquire), 0);
    contents
}

#[test]
fn folders_whose_d_type_says_nothing_are_entered_once_stat_names_them() {
    let (_dir, fd, mut listing) = listed_folder();
    for named in &mut listing.names {
        named.dtype = FileType::Unknown;
    }
    let top = chained(fd, listing);
    let sub = child(entries(&top), "sub");
    let inner = child(entries(&sub.contents), "inner");
    assert_eq!(entries(&inner.contents).len(), 1);
}

#[test]
fn a_d_type_the_stat_contradicts_lists_nothing() {
    let (_dir, fd, mut listing) = listed_folder();
    let g = (0..listing.names.len())
        .find(|&i| listing.name(&listing.names[i]).to_bytes() == b"g")
        .unwrap();
    listing.names[g].dtype = FileType::Directory;
    let top = chained(fd, listing);
    let g = child(entries(&top), "g");
    assert!(matches!(g.contents, Contents::None), "{:?}", g.contents);
    assert_eq!(g.stat.as_ref().unwrap().kind, FileKind::File);
}

fn entry(name: &str, kind: FileKind, contents: Contents) -> Entry {
    Entry {
        name: name.into(),
        stat: Ok(StatFields::unknown(kind)),
        listed: None,
        contents,
    }
}

/// A folder opened on its `d_type` and listed, then replaced by a file before its
/// stat: the listing is dropped, and the census counts all it held as overruled.
#[test]
fn a_listing_the_stat_overrules_is_dropped_and_counted() {
    let walker = walker();
    let inner = Contents::Listed {
        entries: vec![entry("b", FileKind::File, Contents::None)],
        error: None,
        summed: Summed::default(),
    };
    let listed = Contents::Listed {
        entries: vec![
            entry("a", FileKind::Dir, inner),
            entry("c", FileKind::File, Contents::None),
        ],
        error: None,
        summed: Summed::default(),
    };
    let finished = FinishedFolder {
        entries: vec![entry("g", FileKind::File, Contents::None)],
        error: None,
        named: vec![0],
        late: None,
        summed: Summed::default(),
    };
    let settled = walker.settle(finished, [listed], None, CHAIN_BELOW_RUN);
    let g = child(entries(&settled), "g");
    assert!(matches!(g.contents, Contents::None), "{:?}", g.contents);
    assert_eq!(walker.census.snapshot().overruled, 3);
}

#[test]
fn a_folder_held_open_for_late_subfolders_keeps_its_slot() {
    let walker = walker();
    for late_folder in [false, true] {
        let (_dir, fd, mut listing) = listed_folder();
        if late_folder {
            for named in &mut listing.names {
                named.dtype = FileType::Unknown;
            }
        }
        let at: Vec<usize> = listing.named_folders().collect();
        let stats = vec![None; at.len()];
        let slot = ChainSlot::take(&walker.chained_now).expect("a free slot");
        let finished = walker.finish_folder(fd, listing, slot, EnteredEarly { at, stats }, None);
        let taken = walker.chained_now.load(Ordering::Acquire);
        assert_eq!(finished.late.is_some(), late_folder);
        assert_eq!(
            taken,
            usize::from(late_folder),
            "late folder: {late_folder}"
        );
        drop(finished);
        assert_eq!(walker.chained_now.load(Ordering::Acquire), 0);
    }
}

/// A folder is chained only at the end of a run of folders with one subfolder
/// each; a folder with several subfolders, or none, starts the count again.
#[test]
fn only_a_folder_ending_a_run_of_single_subfolders_is_chained() {
    let walker = walker();
    let (_dir, _fd, listing) = listed_folder();
    assert!(walker.may_chain(&listing, 0).is_none());
    assert!(walker.may_chain(&listing, CHAIN_BELOW_RUN - 1).is_none());
    assert!(walker.may_chain(&listing, CHAIN_BELOW_RUN).is_some());
    assert_eq!(walker.chained_now.load(Ordering::Acquire), 0);
    assert_eq!(run_below(2, 1), 3);
    assert_eq!((run_below(2, 0), run_below(2, 2)), (0, 0));
    assert_eq!(run_below(u32::MAX, 1), u32::MAX);
}

#[test]
fn slots_run_out_at_the_bound_and_come_back() {
    let walker = walker();
    let slots: Vec<ChainSlot> = (0..CHAINED_FOLDERS)
        .map(|_| ChainSlot::take(&walker.chained_now).expect("below the bound"))
        .collect();
    assert!(ChainSlot::take(&walker.chained_now).is_none());
    drop(slots);
    assert!(ChainSlot::take(&walker.chained_now).is_some());
}

#[test]
fn the_census_counts_what_the_listing_typed_and_every_stat() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/f"), b"f").unwrap();
    std::fs::write(dir.path().join("g"), b"g").unwrap();
    std::os::unix::fs::symlink("g", dir.path().join("l")).unwrap();
    let (_, census) = list(
        &[dir.path().as_os_str().to_owned()],
        ListOptions::default(),
        false,
    );
    let typed = (census.folders, census.files, census.symlinks, census.other);
    // A file system that gives no d_type lists all four as unknown, and one that
    // does types every one.
    if census.unknown == 0 {
        assert_eq!(typed, (1, 2, 1, 0), "{census:?}");
    } else {
        assert_eq!((typed, census.unknown), ((0, 0, 0, 0), 4), "{census:?}");
    }
    assert_eq!(census.listed(), 4, "{census:?}");
    // One stat per entry, and one for the operand: statx, unless the kernel
    // refused it.
    assert_eq!(census.stat_calls(), 5, "{census:?}");
    if census.statx_refused == 0 {
        assert_eq!((census.statx, census.fstatat), (5, 0), "{census:?}");
    }
}

/// With `-L`, a folder reached by its own name and through a link is listed once,
/// whichever way comes first: the folders a listing names are opened early only
/// when links are not followed, for only the stat can tell a folder seen before.
#[test]
fn with_links_followed_a_folder_reached_twice_is_listed_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("a")).unwrap();
    std::fs::write(dir.path().join("a/f"), b"f").unwrap();
    std::os::unix::fs::symlink("a", dir.path().join("link")).unwrap();
    let options = ListOptions {
        follow_symlinks: true,
        ..ListOptions::default()
    };
    let (top, _) = list(&[dir.path().as_os_str().to_owned()], options, false);
    let top = entries(&top[0].contents);
    let listed = |name| matches!(child(top, name).contents, Contents::Listed { .. });
    let elsewhere = |name| matches!(child(top, name).contents, Contents::Elsewhere);
    assert!(
        (listed("a") && elsewhere("link")) || (listed("link") && elsewhere("a")),
        "{top:?}"
    );
}

/// A folder of empty files, enough that its stats are made in chunks and the last
/// chunk is a partial one; and how many.
fn huge_folder() -> (tempfile::TempDir, usize) {
    let dir = tempfile::tempdir().unwrap();
    let names = CHUNKED_FOLDER + STAT_CHUNK / 2;
    for i in 0..names {
        std::fs::write(dir.path().join(format!("f{i}")), b"").unwrap();
    }
    (dir, names)
}

/// A huge folder's stats are made in chunks over the pool, each counting its own:
/// every one of them reaches the census.
#[test]
fn the_census_counts_every_stat_of_a_huge_folder() {
    let (dir, names) = huge_folder();
    let (_, census) = list(&[dir.path().into()], ListOptions::default(), true);
    assert_eq!(census.listed(), names as u64, "{census:?}");
    assert_eq!(census.stat_calls(), names as u64 + 1, "{census:?}");
}

/// A huge folder's files are summed chunk by chunk: the folder's figures hold every
/// chunk's.
#[test]
fn a_huge_folders_chunks_are_all_summed() {
    let (dir, names) = huge_folder();
    let (roots, _) = list(&[dir.path().into()], ListOptions::default(), true);
    let (entries, summed) = listed_and_summed(&roots[0].contents);
    assert!(entries.is_empty(), "{entries:?}");
    assert_eq!(summed.files, names as u64);
}

/// A huge folder's names are statted in chunks over the pool, and each entry still
/// carries its index in the listing: that index decides which name takes the stat
/// already given for a subfolder opened early. The stat given here is another
/// folder's, so only its inode tells it from the subfolder's own.
#[test]
fn a_huge_folders_chunks_keep_each_names_index() {
    let (dir, files) = huge_folder();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let fd = open_folder_at(CWD, dir.path(), false).unwrap();
    let mut listing = first_batch(&fd);
    listing.finish(&fd);
    let given_at = listing
        .named_folders()
        .next()
        .expect("sub is listed as a folder");
    let census = Counters::default();
    let other = stat_entry(CWD, dir.path().as_os_str(), false, &census).unwrap();
    let given = |at| (at == given_at).then(|| other.clone());
    let left_out = |_, _: &SumFacts| false;
    let statted = stat_all(&fd, &listing, false, &census, (&left_out, &given));
    assert_eq!(statted.listed_at, (0..=files).collect::<Vec<_>>());
    let inode = |e: &Entry| e.stat.as_ref().unwrap().ino.map(|f| f.value);
    let given_to: Vec<usize> = (0..=files)
        .filter(|&i| inode(&statted.entries[i]) == other.ino.map(|f| f.value))
        .collect();
    assert_eq!(given_to, [given_at]);
    assert_eq!(statted.entries[given_at].name, "sub");
}

/// A walk that sums files keeps folders, files with other links and files it
/// could not stat, and its figures add up exactly the files it left out.
#[test]
fn summing_leaves_out_only_files_with_one_link() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("linked"), b"12345").unwrap();
    std::fs::hard_link(dir.path().join("linked"), dir.path().join("sub/other")).unwrap();
    std::fs::write(dir.path().join("one"), b"1").unwrap();
    std::fs::write(dir.path().join("sub/two"), b"22").unwrap();
    std::fs::write(dir.path().join("sub/three"), b"333").unwrap();
    let (roots, _) = list(&[dir.path().into()], ListOptions::default(), true);
    let (entries, summed) = listed_and_summed(&roots[0].contents);
    let mut kept: Vec<_> = entries.iter().map(|e| e.name.clone()).collect();
    kept.sort();
    assert_eq!(kept, ["linked", "sub"]);
    assert_eq!((summed.files, summed.size), (1, 1));
    let (entries, summed) = listed_and_summed(&child(entries, "sub").contents);
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].name, "other");
    assert_eq!((summed.files, summed.size), (2, 5));
    assert!(summed.blocks > 0);
}

/// A chained walk takes a subfolder's stat from the descriptor it opened: it
/// must be what a stat of the subfolder's name gives, and count as one `statx`.
#[test]
fn a_folder_statted_through_its_descriptor_is_what_its_name_says() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/f"), b"f").unwrap();
    let parent = open_folder_at(CWD, dir.path(), false).unwrap();
    let census = Counters::default();
    let by_name = stat_entry(&parent, "sub", false, &census).unwrap();
    let sub = open_folder_at(&parent, "sub", false).unwrap();
    let by_descriptor = stat_open_folder(&sub, &census).unwrap();
    assert_eq!(by_descriptor, by_name);
    assert_eq!(by_descriptor.kind, FileKind::Dir);
    assert_eq!(census.snapshot().statx, 2);
}

/// Every entry below `entries` with its kind and size, by path, sorted.
fn flattened(entries: &[Entry]) -> Vec<(std::path::PathBuf, FileKind, Option<u64>)> {
    let mut seen = Vec::new();
    let mut pending: Vec<(std::path::PathBuf, &Entry)> =
        entries.iter().map(|e| (e.name.clone().into(), e)).collect();
    while let Some((path, entry)) = pending.pop() {
        let stat = entry.stat.as_ref().expect("every entry stats");
        seen.push((path.clone(), stat.kind, stat.size.map(|s| s.value)));
        if let Contents::Listed { entries, error, .. } = &entry.contents {
            assert!(error.is_none(), "{}: {error:?}", path.display());
            pending.extend(entries.iter().map(|e| (path.join(&e.name), e)));
        }
    }
    seen.sort_by(|a, b| a.0.cmp(&b.0));
    seen
}

/// Chains long enough to be walked as chains, each ending another way: in a folder
/// with a few subfolders (entered by the last level), in one with more subfolders
/// than are opened ahead (the next level not chained, its contents the bottom),
/// and in an empty folder. Both engines see every entry alike.
#[test]
fn chains_end_in_every_kind_of_bottom_as_the_reference_lists() {
    let dir = tempfile::tempdir().unwrap();
    let bottoms = [("few", 3), ("many", OPEN_AHEAD + 4), ("empty", 0)];
    for (name, subfolders) in bottoms {
        let mut level = dir.path().join(name);
        for depth in 0..CHAINED_FOLDERS + 8 {
            level.push(format!("c{depth}"));
            std::fs::create_dir_all(&level).unwrap();
            std::fs::write(level.join("f"), vec![b'x'; depth + 1]).unwrap();
        }
        for i in 0..subfolders {
            std::fs::create_dir_all(level.join(format!("s{i}/inner"))).unwrap();
            std::fs::write(level.join(format!("s{i}/inner/g")), b"g").unwrap();
        }
    }
    let operands = [dir.path().as_os_str().to_os_string()];
    let options = ListOptions::default();
    let fast = crate::walk::list(crate::walk::Engine::Fast, &operands, options);
    let reference = crate::walk::list(crate::walk::Engine::Reference, &operands, options);
    let fast = flattened(&fast);
    // The operand, each chain's top, a folder and a file a level, and three entries
    // a bottom subfolder.
    let subfolders: usize = bottoms.iter().map(|(_, n)| n).sum();
    assert_eq!(
        fast.len(),
        1 + 3 + 3 * 2 * (CHAINED_FOLDERS + 8) + 3 * subfolders
    );
    assert_eq!(fast, flattened(&reference));
}

/// A chain whose levels the two workers strictly take in turns (each leaves the
/// level it opened to the other) ends as the reference lists it, every level at its
/// own depth, whichever worker walked it or its bottom.
#[test]
fn a_chain_walked_in_alternating_turns_lists_as_the_reference_does() {
    let dir = tempfile::tempdir().unwrap();
    let mut level = dir.path().to_path_buf();
    for depth in 0..CHAINED_FOLDERS + 9 {
        level.push(format!("c{depth}"));
        std::fs::create_dir(&level).unwrap();
        std::fs::write(level.join("f"), vec![b'x'; depth + 1]).unwrap();
    }
    for i in 0..3 {
        std::fs::create_dir_all(level.join(format!("s{i}/inner"))).unwrap();
    }
    let top = dir.path().join("c0");
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let fd = rustix::fs::open(&top, flags, Mode::empty()).unwrap();
    let listing = first_batch(&fd);
    let walker = walker();
    let slot = ChainSlot::take(&walker.chained_now).expect("a free slot");
    let at = (None, CHAIN_BELOW_RUN);
    let turns = super::turns::Turns::alternating();
    // Two workers of its own whatever the walk pool has: alternating turns wait for
    // a second worker, which a one-thread pool never has.
    let two = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let fast = two.install(|| walker.chain_in_turns(turns, fd, listing, slot, at));
    assert_eq!(walker.chained_now.load(Ordering::Acquire), 0);
    let operands = [top.into_os_string()];
    let reference = crate::walk::list(
        crate::walk::Engine::Reference,
        &operands,
        ListOptions::default(),
    );
    let reference = &reference[0].contents;
    assert_eq!(flattened(entries(&fast)), flattened(entries(reference)));
    assert_eq!(
        flattened(entries(&fast)).len(),
        2 * (CHAINED_FOLDERS + 8) + 1 + 3 * 2
    );
}
