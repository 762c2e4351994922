//! Opening a file in a folder an agent may write (the session's bus,
//! `.msg/`) without following a link it planted there: the last component
//! is opened with `O_NOFOLLOW` (a symbolic link fails, `ELOOP`), and what
//! opened must be a regular file with one name (a hard link to a file
//! elsewhere is refused). wavecrew, which runs unconfined, then never
//! writes or reads through the agent's hands.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// Open `path` with `options`, never through a link: a symbolic link in
/// its place, anything but a regular file, or a file with another name
/// elsewhere is refused, naming what it is.
pub fn open(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    let file = options
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits().cast_signed())
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
                io::Error::other(format!(
                    "`{}` is a symbolic link, where wavecrew keeps a file of its own: refused \
                     (an agent may have planted it; remove it)",
                    path.display()
                ))
            } else {
                e
            }
        })?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other(format!(
            "`{}` is not a regular file: refused",
            path.display()
        )));
    }
    if meta.nlink() > 1 {
        return Err(io::Error::other(format!(
            "`{}` has {} names (a hard link to a file elsewhere): refused",
            path.display(),
            meta.nlink()
        )));
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_refused_and_plain_files_open() {
        let tmp = tempfile::tempdir().unwrap();
        let canary = tmp.path().join("canary");
        std::fs::write(&canary, "mine\n").unwrap();
        let plain = tmp.path().join("plain");
        let append = || {
            let mut o = OpenOptions::new();
            o.append(true).create(true);
            o
        };
        assert!(open(&plain, &mut append()).is_ok());
        let soft = tmp.path().join("soft");
        std::os::unix::fs::symlink(&canary, &soft).unwrap();
        let e = open(&soft, &mut append()).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        let hard = tmp.path().join("hard");
        std::fs::hard_link(&canary, &hard).unwrap();
        let e = open(&hard, &mut append()).unwrap_err();
        assert!(e.to_string().contains("2 names"), "{e}");
        let dir = tmp.path().join("dir");
        std::fs::create_dir(&dir).unwrap();
        assert!(open(&dir, OpenOptions::new().read(true)).is_err());
        assert_eq!(std::fs::read_to_string(&canary).unwrap(), "mine\n");
    }
}
