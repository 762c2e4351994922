//! Integration tests of the backends: supervision limits and process trees,
//! argv safety, and the recorded streams of the real CLIs.

mod attempts;
mod governor;
mod real_clis;
mod samples;
mod supervision;
mod tables;
