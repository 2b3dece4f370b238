//! The Linux fast engine under conditions a plain tree never shows: entries that
//! vanish or change kind between the listing and the stat, mount points whose
//! listed inode is not the mounted root's, folders that can be listed but not
//! searched, and a kernel (or seccomp profile) that refuses `statx`. Each module
//! holds the engine to the reference engine, to GNU du or to the real states of
//! the tree; each check was seen failing against a planted fault in the engine.
#![cfg(target_os = "linux")]

mod mounts;
mod no_statx;
mod race;
mod unsearchable;
