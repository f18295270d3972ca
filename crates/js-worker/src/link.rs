//! The worker's end of its pipes to the host: frames read and written on the engine thread,
//! and the state the engine and the host functions share while code runs.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::fs::File;
use std::io::{self, BufReader, Write};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use worker_protocol::{
    AccessInfo, CallOutcome, CallRequest, FrameError, HostFrame, MAX_HOST_FRAME_BYTES, ToolBinding,
    WorkerFrame, encode, read_frame,
};

use crate::error::WorkerError;
use crate::tools::ToolIndex;

pub(crate) enum Event {
    Frame(HostFrame),
    Closed(Option<FrameError>),
}

/// Bytes from the host, read on the engine thread itself: a reply wakes the thread that runs
/// the code directly, with no reader thread and channel in between.
pub(crate) struct Input {
    pub(crate) reader: BufReader<File>,
}

impl Input {
    pub(crate) fn stdin() -> Result<Self, WorkerError> {
        let fd = io::stdin()
            .as_fd()
            .try_clone_to_owned()
            .map_err(WorkerError::Stdin)?;
        Ok(Input {
            reader: BufReader::with_capacity(64 * 1024, File::from(fd)),
        })
    }

    /// The next frame, or `None` when `wait` passed first (`None`: wait for as long as it takes).
    fn next(&mut self, wait: Option<Duration>) -> Option<Event> {
        if let Some(wait) = wait
            && self.reader.buffer().is_empty()
        {
            // Whole milliseconds, rounded up: a timer fires at most a millisecond late.
            let ms = wait.as_micros().div_ceil(1000);
            let timeout = PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX);
            let mut fds = [PollFd::new(
                self.reader.get_ref().as_fd(),
                PollFlags::POLLIN,
            )];
            match poll(&mut fds, timeout) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => return None,
                Err(e) => return Some(Event::Closed(Some(FrameError::Io(e.into())))),
            }
        }
        Some(
            match read_frame::<_, HostFrame>(&mut self.reader, MAX_HOST_FRAME_BYTES) {
                Ok(frame) => Event::Frame(frame),
                Err(FrameError::Eof) => Event::Closed(None),
                Err(e) => Event::Closed(Some(e)),
            },
        )
    }
}

/// Why the host's frames stopped: a broken frame, or the pipe closed.
pub(crate) fn closed(e: Option<FrameError>) -> String {
    match e {
        Some(e) => format!("bad frame from host: {e}"),
        None => "host closed the pipe".to_string(),
    }
}

/// State shared by the host functions the prelude receives.
pub(crate) struct Shared {
    /// Our own handle on stdout: a frame is one `write`, with no line buffering in between.
    out: File,
    pub(crate) started: Instant,
    /// Calls awaiting their reply: id -> what was asked (`tools.server.tool`), for errors.
    pub(crate) outstanding: HashMap<u64, String>,
    pub(crate) timers: BinaryHeap<Reverse<(Instant, u64)>>,
    pub(crate) log_budget: u64,
    pub(crate) logs_truncated: bool,
    pub(crate) broken: Option<String>,
    /// The run's upstream tools, until the prelude first asks about them.
    pub(crate) tools: Vec<ToolBinding>,
    pub(crate) tool_index: Option<ToolIndex>,
    /// Frames from the host, read here on the engine thread.
    input: Input,
    /// Frames that arrived while a host function waited for its own answer
    /// ([`Shared::request_now`]), to be handled next.
    deferred: VecDeque<HostFrame>,
    /// Ids of requests made with [`Shared::request_now`], above any the prelude uses.
    next_sync_id: u64,
    /// What the run was granted (files, network), for error messages.
    pub(crate) access: Option<AccessInfo>,
    /// The last failed file operation, as JSON, for the prelude to throw.
    pub(crate) fs_error: Option<String>,
}

/// The first id of [`Shared::request_now`]'s requests: the prelude numbers its calls from 1
/// in JavaScript numbers, which stay below 2^53.
const SYNC_IDS: u64 = 1 << 53;

impl Shared {
    /// The state of a worker that has not run anything yet, on these pipes.
    pub(crate) fn new(input: Input, out: File) -> Self {
        Shared {
            out,
            started: Instant::now(),
            outstanding: HashMap::new(),
            timers: BinaryHeap::new(),
            log_budget: u64::MAX,
            logs_truncated: false,
            broken: None,
            tools: Vec::new(),
            tool_index: None,
            input,
            deferred: VecDeque::new(),
            next_sync_id: 0,
            access: None,
            fs_error: None,
        }
    }

    /// The next frame from the host (deferred ones first), or `None` when `wait` passed.
    pub(crate) fn next_event(&mut self, wait: Option<Duration>) -> Option<Event> {
        match self.deferred.pop_front() {
            Some(frame) => Some(Event::Frame(frame)),
            None => self.input.next(wait),
        }
    }

    /// Asks the host and waits for its answer, for a host function that must return a value
    /// at once (a tool's declaration). Other frames arriving meanwhile are kept, in order.
    pub(crate) fn request_now(&mut self, request: CallRequest) -> Result<CallOutcome, WorkerError> {
        let id = SYNC_IDS + self.next_sync_id;
        self.next_sync_id += 1;
        self.send(&WorkerFrame::Call {
            id,
            request,
            tail: false,
        });
        if let Some(e) = &self.broken {
            return Err(WorkerError::Broken(e.clone()));
        }
        loop {
            match self.input.next(None) {
                Some(Event::Frame(HostFrame::Reply {
                    id: got, outcome, ..
                })) if got == id => {
                    return Ok(outcome);
                }
                Some(Event::Frame(frame)) => self.deferred.push_back(frame),
                Some(Event::Closed(e)) => {
                    let e = closed(e);
                    self.broken = Some(e.clone());
                    return Err(WorkerError::Broken(e));
                }
                None => {}
            }
        }
    }

    pub(crate) fn tool_index(&mut self) -> &ToolIndex {
        let tools = &mut self.tools;
        self.tool_index
            .get_or_insert_with(|| ToolIndex::new(std::mem::take(tools)))
    }

    pub(crate) fn send<T: serde::Serialize>(&mut self, frame: &T) {
        if self.broken.is_some() {
            return;
        }
        let written = encode(frame)
            .map_err(io::Error::other)
            .and_then(|bytes| self.write_reading(&bytes));
        if let Err(e) = written {
            self.broken = Some(format!("cannot write to host: {e}"));
        }
    }

    /// Sends a call whose request is JSON text already checked by a full parse (the probe in
    /// `host.call`): written into the frame as it is, the same bytes
    /// [`RawWorkerFrame::Call`](worker_protocol::RawWorkerFrame::Call) would write, without
    /// checking the text a second time.
    pub(crate) fn send_call_text(&mut self, id: u64, request: &[u8], texts: &[String]) {
        if self.broken.is_some() {
            return;
        }
        let head = format!(r#"{{"type":"call","id":{id},"request":"#);
        let tail = if texts.is_empty() {
            0
        } else {
            1 + texts.iter().map(String::len).sum::<usize>()
        };
        let len = head.len() + request.len() + 1 + tail;
        let mut bytes = Vec::with_capacity(4 + len);
        bytes.extend_from_slice(&u32::try_from(len).unwrap_or(u32::MAX).to_be_bytes());
        bytes.extend_from_slice(head.as_bytes());
        bytes.extend_from_slice(request);
        bytes.push(b'}');
        if tail > 0 {
            bytes.push(b'\n');
            for text in texts {
                bytes.extend_from_slice(text.as_bytes());
            }
        }
        if let Err(e) = self.write_reading(&bytes) {
            self.broken = Some(format!("cannot write to host: {e}"));
        }
    }

    /// Writes `bytes` to the host. While the pipe is full, frames from the host are read and
    /// kept for later ([`Shared::deferred`]): the host stops reading requests while its
    /// replies go unread, so a worker that only wrote would wait on the host forever.
    fn write_reading(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            match (&self.out).write(bytes) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => bytes = &bytes[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let readable = !self.input.reader.buffer().is_empty() || {
                        let mut fds = [
                            PollFd::new(self.out.as_fd(), PollFlags::POLLOUT),
                            PollFd::new(self.input.reader.get_ref().as_fd(), PollFlags::POLLIN),
                        ];
                        match poll(&mut fds, PollTimeout::NONE) {
                            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                            Err(e) => return Err(e.into()),
                        }
                        fds[1].any().unwrap_or(false)
                    };
                    if readable {
                        match self.input.next(None) {
                            Some(Event::Frame(frame)) => self.deferred.push_back(frame),
                            Some(Event::Closed(e)) => return Err(io::Error::other(closed(e))),
                            None => {}
                        }
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}
