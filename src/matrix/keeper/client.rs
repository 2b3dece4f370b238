//! eqcheck's end of one keeper: the process, its two pipes, and the exchange of
//! one run. The keeper leads a process group of its own, so a Ctrl-C at the
//! terminal reaches eqcheck only, whose interrupt handler ends the keeper's runs
//! before anything is removed; the keeper outlives the interrupt only until
//! eqcheck exits and its stdin closes.

use std::io::{self, BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use super::serve::{Reply, KEEPER_ARGUMENT};
use super::{Cost, Request};
use crate::cleanup;
use crate::matrix::exec::{self, ArmUser};

pub(super) struct Client {
    child: Child,
    /// Taken when the client is dropped: closing it ends the keeper.
    requests: Option<ChildStdin>,
    replies: BufReader<ChildStdout>,
}

impl Client {
    /// Starts a keeper from eqcheck's own binary.
    pub(super) fn start() -> io::Result<Client> {
        use std::os::unix::process::CommandExt;
        let exe = std::env::current_exe()?;
        let mut child = Command::new(exe)
            .arg(KEEPER_ARGUMENT)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .process_group(0)
            .spawn()?;
        cleanup::register_keeper(child.id());
        let (Some(requests), Some(replies)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(io::Error::other("the keeper's pipes were not made"));
        };
        Ok(Client {
            child,
            requests: Some(requests),
            replies: BufReader::new(replies),
        })
    }

    /// Has the keeper make one run; `user` words the hint of a run that could not
    /// start. `Err`: the keeper failed, and must not be asked again.
    pub(super) fn run(&mut self, request: &Request, user: &ArmUser) -> io::Result<Cost> {
        let Some(requests) = self.requests.as_mut() else {
            return Err(io::Error::other("it was closed"));
        };
        // One write for the whole line: the pipe is unbuffered, and every write
        // would wake the keeper's reader.
        let mut line = serde_json::to_vec(request)?;
        line.push(b'\n');
        requests.write_all(&line)?;
        let mut started = None;
        loop {
            match self.reply()? {
                Reply::Started { pid } => {
                    if !cleanup::register_group(pid) {
                        // Started as an interrupt was being handled, after the
                        // handler ended this keeper's runs: end this one too.
                        crate::sweep::kill_descendants(self.child.id(), &[pid]);
                    }
                    started = Some(pid);
                }
                Reply::NotStarted { errno, error } => {
                    let hint = errno.map_or(String::new(), |errno| {
                        exec::spawn_hint(&io::Error::from_raw_os_error(errno), user)
                    });
                    return Ok(Cost::failed(format!("{error}{hint}")));
                }
                Reply::Done(measured) => {
                    if let Some(pid) = started {
                        cleanup::forget_group(pid);
                    }
                    return Ok(measured.into());
                }
            }
        }
    }

    fn reply(&mut self) -> io::Result<Reply> {
        let mut line = String::new();
        if self.replies.read_line(&mut line)? == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "it ended"));
        }
        serde_json::from_str(&line).map_err(io::Error::other)
    }
}

impl Drop for Client {
    /// Closing its stdin ends the keeper once its run (if any) is over; it is
    /// reaped here, so its runs' CPU is counted among eqcheck's children's.
    fn drop(&mut self) {
        drop(self.requests.take());
        let _ = self.child.wait();
        cleanup::forget_keeper(self.child.id());
    }
}
