//! A network of its own for an agent: a new user and network namespace
//! that has only its loopback, so nothing it starts reaches another host,
//! this machine's other ports or a DNS server, and one listener on its
//! loopback that is handed to wavecrew (the egress proxy, outside the
//! namespace), which decides what each connection may reach.
//!
//! The namespace is entered by the box ([`crate::agent_box`]), a process
//! of its own, single-threaded as the kernel requires for a new user
//! namespace, before it confines itself and becomes the agent (`exec`).
//! The user namespace maps the user to itself (root to root): the agent
//! keeps its identity and owns its files, and holds no capability over
//! the machine's own network namespace, so it cannot leave its own.

use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::net::{Ipv4Addr, TcpListener};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::Path;

use nix::sched::{CloneFlags, unshare};
use nix::sys::socket::{
    AddressFamily, MsgFlags, NetlinkAddr, SockFlag, SockProtocol, SockType, recv, sendto, socket,
};
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};

/// Why the agent's network could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum NetnsError {
    /// The kernel refused a new user and network namespace.
    #[error(
        "cannot make a network namespace of its own for the agent ({0}); unprivileged user \
         namespaces may be turned off on this machine (Ubuntu 24.04's AppArmor rule \
         `kernel.apparmor_restrict_unprivileged_userns`, or `user.max_user_namespaces = 0`)"
    )]
    Unshare(nix::Error),
    /// Mapping the user into the new namespace failed.
    #[error("cannot map the user into the agent's namespace: {0}")]
    Map(std::io::Error),
    /// The loopback could not be brought up.
    #[error("cannot bring up the agent's loopback: {0}")]
    Loopback(String),
    /// The listener could not be made or handed over.
    #[error("cannot hand the agent's proxy listener to wavecrew: {0}")]
    Handover(std::io::Error),
}

/// Move this process (single-threaded: a new user namespace needs it)
/// into a new user and network namespace, the user mapped to itself,
/// with its loopback up and nothing else.
pub fn enter() -> Result<(), NetnsError> {
    let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET).map_err(NetnsError::Unshare)?;
    // The order the kernel asks of an unprivileged writer: groups denied
    // before the group map.
    std::fs::write("/proc/self/setgroups", "deny").map_err(NetnsError::Map)?;
    std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1\n")).map_err(NetnsError::Map)?;
    std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1\n")).map_err(NetnsError::Map)?;
    loopback_up()
}

/// `ip link set lo up`, as one rtnetlink request (`RTM_NEWLINK`, the
/// loopback's `IFF_UP`), acknowledged.
fn loopback_up() -> Result<(), NetnsError> {
    use nix::libc;
    let err = |e: nix::Error| NetnsError::Loopback(e.to_string());
    let index = nix::net::if_::if_nametoindex("lo").map_err(err)?;
    let sock = socket(
        AddressFamily::Netlink,
        SockType::Raw,
        SockFlag::SOCK_CLOEXEC,
        SockProtocol::NetlinkRoute,
    )
    .map_err(err)?;
    let mut msg = Vec::with_capacity(32);
    // struct nlmsghdr: length, type, flags, sequence, port id.
    msg.extend_from_slice(&32u32.to_ne_bytes());
    msg.extend_from_slice(&libc::RTM_NEWLINK.to_ne_bytes());
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let flags = (libc::NLM_F_REQUEST | libc::NLM_F_ACK) as u16;
    msg.extend_from_slice(&flags.to_ne_bytes());
    msg.extend_from_slice(&1u32.to_ne_bytes());
    msg.extend_from_slice(&0u32.to_ne_bytes());
    // struct ifinfomsg: family, padding, type, index, flags, change mask.
    msg.extend_from_slice(&[0, 0]);
    msg.extend_from_slice(&0u16.to_ne_bytes());
    msg.extend_from_slice(&i32::try_from(index).unwrap_or(1).to_ne_bytes());
    #[allow(clippy::cast_sign_loss)]
    let up = libc::IFF_UP as u32;
    msg.extend_from_slice(&up.to_ne_bytes());
    msg.extend_from_slice(&up.to_ne_bytes());
    sendto(
        std::os::fd::AsRawFd::as_raw_fd(&sock),
        &msg,
        &NetlinkAddr::new(0, 0),
        MsgFlags::empty(),
    )
    .map_err(err)?;
    // The acknowledgement: a header of type NLMSG_ERROR whose error is 0.
    let mut ack = [0u8; 64];
    let n = recv(
        std::os::fd::AsRawFd::as_raw_fd(&sock),
        &mut ack,
        MsgFlags::empty(),
    )
    .map_err(err)?;
    if n < 20 {
        return Err(NetnsError::Loopback(format!("a short reply ({n} bytes)")));
    }
    let kind = u16::from_ne_bytes([ack[4], ack[5]]);
    let code = i32::from_ne_bytes([ack[16], ack[17], ack[18], ack[19]]);
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    if kind != libc::NLMSG_ERROR as u16 {
        return Err(NetnsError::Loopback(format!(
            "an unexpected reply (type {kind})"
        )));
    }
    if code != 0 {
        return Err(NetnsError::Loopback(
            std::io::Error::from_raw_os_error(-code).to_string(),
        ));
    }
    Ok(())
}

/// Listen on `127.0.0.1` (a free port) in this process's namespace and
/// hand the listener to the process listening on the unix socket `to`
/// (which [`receive_listener`]s it); returns the port.
pub fn hand_over_listener(to: &Path) -> Result<u16, NetnsError> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(NetnsError::Handover)?;
    let port = listener.local_addr().map_err(NetnsError::Handover)?.port();
    let stream = UnixStream::connect(to).map_err(NetnsError::Handover)?;
    let fds = [listener.as_fd()];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    control.push(SendAncillaryMessage::ScmRights(&fds));
    rustix::net::sendmsg(
        &stream,
        &[IoSlice::new(b"L")],
        &mut control,
        SendFlags::empty(),
    )
    .map_err(|e| NetnsError::Handover(e.into()))?;
    // Wait until wavecrew holds it: the agent's first connection must
    // find someone accepting.
    let mut ok = [0u8; 1];
    std::io::Read::read_exact(&mut &stream, &mut ok).map_err(NetnsError::Handover)?;
    Ok(port)
}

/// The listener a box handed over on `stream` ([`hand_over_listener`]);
/// the box goes on once this returns.
pub fn receive_listener(stream: &UnixStream) -> std::io::Result<TcpListener> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let mut byte = [0u8; 1];
    rustix::net::recvmsg(
        stream,
        &mut [IoSliceMut::new(&mut byte)],
        &mut control,
        RecvFlags::CMSG_CLOEXEC,
    )?;
    let fd = control
        .drain()
        .find_map(|m| match m {
            RecvAncillaryMessage::ScmRights(mut fds) => fds.next(),
            _ => None,
        })
        .ok_or_else(|| std::io::Error::other("the box sent no listener"))?;
    let listener = TcpListener::from(fd);
    std::io::Write::write_all(&mut &*stream, b"K")?;
    Ok(listener)
}
