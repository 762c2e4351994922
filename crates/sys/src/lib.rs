//! The ground floor every other wavecrew crate stands on: what two places
//! need lives here once.
//!
//! * [`git`]: the one way wavecrew runs `git` (argv only, a clean
//!   environment, hooks and the fsmonitor off, errors carrying the command);
//! * [`process`]: process groups (a guarded [`process::Pgid`], spawning a
//!   child as the leader of its own group, terminate with grace), bounded
//!   output tails, and [`process::blocking`] for synchronous work on an
//!   async runtime;
//! * [`path`]: project-relative paths checked once ([`path::ProjectPath`]),
//!   and a task's working folder resolved the same way by every caller;
//! * [`io`]: the I/O error at a path every crate's error carries
//!   ([`io::PathIoError`]);
//! * [`lock`]: exclusive file locks ([`lock::FileLock`]);
//! * [`no_follow`]: a file opened where an agent may write, never through
//!   a link it planted;
//! * [`sandbox`]: confining where a child process tree may write
//!   (Landlock);
//! * [`confined`]: the one spawner of the agent and of every check of its
//!   work (the rules, the box, the proxy);
//! * [`netns`] and [`agent_box`]: an agent's network of its own, and the
//!   `wavecrew-box` process that sets it and the write rules up before it
//!   becomes the agent (or a check of its work);
//! * [`egress`] and [`allow_hosts`]: the proxy that is such a network's
//!   only way out, and the hosts it lets through.
//!
//! Nothing here knows about tasks, sessions or agents.
//!
//! ```
//! use wavecrew_sys::path::ProjectPath;
//!
//! assert_eq!(ProjectPath::parse("./src//lib.rs").unwrap().as_str(), "src/lib.rs");
//! assert!(ProjectPath::parse("../outside").is_err());
//! ```

pub mod agent_box;
pub mod allow_hosts;
pub mod confined;
pub mod egress;
pub mod git;
pub mod io;
pub mod lock;
pub mod netns;
pub mod no_follow;
pub mod path;
pub mod process;
pub mod sandbox;
