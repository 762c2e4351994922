//! Integration tests of `wavecrew-isolation` against real git, each in its
//! own temp dir (created and deleted by the test, nothing else touched).

mod apply;
mod bundles;
mod guard;
mod landing;
mod shadow;
mod start;
mod support;
mod validation;
mod worktrees;
