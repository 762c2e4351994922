//! Integration tests of the backends: supervision limits and process trees,
//! argv safety, and the recorded streams of the real CLIs.

mod samples;
mod supervision;
