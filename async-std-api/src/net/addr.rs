//! Addresses and name resolution that suspend instead of blocking:
//! [`ToSocketAddrs`] and [`lookup_host`].

use std::cell::RefCell;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::panic::Location;
use std::rc::Rc;

use async_abi::{
    AaStatus, AA_E_DNS_AGAIN, AA_E_DNS_FAIL, AA_E_DNS_FAMILY, AA_E_DNS_NONAME, AA_E_UNSUPPORTED,
};

use super::from_aa;
use crate::core::offload::offload;
use crate::core::runtime::{self, with_running};
use crate::core::wait::{checkpoint, suspend_once};

/// What [`TcpStream::connect`](super::TcpStream::connect),
/// [`TcpListener::bind`](super::TcpListener::bind) and the
/// [`UdpSocket`](super::UdpSocket) calls accept: the same types as
/// [`std::net::ToSocketAddrs`] (socket addresses, `(ip, port)`,
/// `(host, port)`, `"host:port"` strings, slices of addresses), so a call
/// ports unchanged. The difference is name resolution: a host name is
/// resolved by the reactor (`AA_CAP_DNS`) or, on a reactor without it, on
/// the blocking pool, while the coroutine suspends; std's
/// `to_socket_addrs` would block the whole loop in `getaddrinfo`.
///
/// Addresses given literally never wait. Outside a coroutine a host name
/// is resolved by the system resolver on the calling thread (there is no
/// loop to stall).
///
/// The trait is sealed: its method is the runtime's.
pub trait ToSocketAddrs: sealed::Sealed {}

pub(crate) mod sealed {
    use std::io;
    use std::net::SocketAddr;
    use std::panic::Location;

    /// How each type turns into addresses.
    pub trait Sealed {
        /// The addresses, resolving names without blocking the loop.
        #[doc(hidden)]
        fn to_addrs(&self, at: &'static Location<'static>) -> io::Result<Vec<SocketAddr>>;
    }
}

/// The addresses of `addr`, for the runtime's socket constructors.
pub(crate) fn addrs_of<A: ToSocketAddrs>(
    addr: &A,
    at: &'static Location<'static>,
) -> io::Result<Vec<SocketAddr>> {
    addr.to_addrs(at)
}

macro_rules! literal {
    ($($t:ty),*) => {$(
        impl ToSocketAddrs for $t {}
        impl sealed::Sealed for $t {
            fn to_addrs(&self, _: &'static Location<'static>) -> io::Result<Vec<SocketAddr>> {
                Ok(vec![SocketAddr::from(*self)])
            }
        }
    )*};
}

literal!(
    SocketAddr,
    SocketAddrV4,
    SocketAddrV6,
    (IpAddr, u16),
    (Ipv4Addr, u16),
    (Ipv6Addr, u16)
);

impl ToSocketAddrs for (&str, u16) {}
impl sealed::Sealed for (&str, u16) {
    fn to_addrs(&self, at: &'static Location<'static>) -> io::Result<Vec<SocketAddr>> {
        let (host, port) = *self;
        if let Ok(ip) = host.parse::<IpAddr>() {
            return Ok(vec![SocketAddr::new(ip, port)]);
        }
        resolve(host, port, at)
    }
}

impl ToSocketAddrs for (String, u16) {}
impl sealed::Sealed for (String, u16) {
    fn to_addrs(&self, at: &'static Location<'static>) -> io::Result<Vec<SocketAddr>> {
        (self.0.as_str(), self.1).to_addrs(at)
    }
}

impl ToSocketAddrs for str {}
impl sealed::Sealed for str {
    fn to_addrs(&self, at: &'static Location<'static>) -> io::Result<Vec<SocketAddr>> {
        if let Ok(a) = self.parse::<SocketAddr>() {
            return Ok(vec![a]);
        }
        let (host, port) = split_host_port(self)?;
        (host, port).to_addrs(at)
    }
}

impl ToSocketAddrs for String {}
impl sealed::Sealed for String {
    fn to_addrs(&self, at: &'static Location<'static>) -> io::Result<Vec<SocketAddr>> {
        self.as_str().to_addrs(at)
    }
}

impl ToSocketAddrs for [SocketAddr] {}
impl sealed::Sealed for [SocketAddr] {
    fn to_addrs(&self, _: &'static Location<'static>) -> io::Result<Vec<SocketAddr>> {
        Ok(self.to_vec())
    }
}

impl<T: ToSocketAddrs + ?Sized> ToSocketAddrs for &T {}
impl<T: ToSocketAddrs + ?Sized> sealed::Sealed for &T {
    fn to_addrs(&self, at: &'static Location<'static>) -> io::Result<Vec<SocketAddr>> {
        (**self).to_addrs(at)
    }
}

/// `"host:port"` as std parses it (the port after the last colon).
fn split_host_port(s: &str) -> io::Result<(&str, u16)> {
    let invalid = |what: &str| io::Error::new(io::ErrorKind::InvalidInput, what.to_owned());
    let (host, port) = s
        .rsplit_once(':')
        .ok_or_else(|| invalid("invalid socket address"))?;
    let port = port
        .parse::<u16>()
        .map_err(|_| invalid("invalid port value"))?;
    Ok((host, port))
}

/// Resolves a host name and a port (module doc): `"localhost:80"`,
/// `("example.org", 443)`, or a literal address (no lookup).
///
/// The RFC leaves DNS to the standard library; tokio's `lookup_host` is
/// the model. The lookup is done by the reactor (`AA_CAP_DNS`: both
/// built-in reactors resolve on their own threads) or, on a reactor
/// without it, on the blocking pool; the coroutine suspends meanwhile.
///
/// # Errors
///
/// `InvalidInput` for a malformed address or port; an error naming the
/// host if it does not resolve (`Other`: "failed to lookup address
/// information: ..." as std says); an error of kind `Other` carrying a
/// [`Cancelled`](crate::Cancelled) if the coroutine is cancelled while it
/// waits (the lookup is abandoned).
///
/// # Panics
///
/// Never; outside a coroutine a name is resolved by std on the calling
/// thread.
///
/// # Examples
///
/// ```
/// use async_std_api::net::lookup_host;
/// use async_std_api::run;
///
/// run(|| {
///     let addrs: Vec<_> = lookup_host("localhost:8080").unwrap().collect();
///     assert!(addrs.iter().all(|a| a.port() == 8080 && a.ip().is_loopback()));
///     assert!(!addrs.is_empty());
/// })
/// .unwrap();
/// ```
#[track_caller]
pub fn lookup_host<A: ToSocketAddrs>(host: A) -> io::Result<std::vec::IntoIter<SocketAddr>> {
    Ok(host.to_addrs(Location::caller())?.into_iter())
}

/// `host` and `port` through the reactor, the pool, or std (module doc).
fn resolve(host: &str, port: u16, at: &'static Location<'static>) -> io::Result<Vec<SocketAddr>> {
    let in_coroutine = with_running(|_, _| ()).is_some();
    if !in_coroutine {
        return std_lookup(host, port);
    }
    let via_reactor = with_running(|rt, _| {
        let has = rt.reactor.has_dns();
        if !has {
            rt.reactor.fell_back(async_abi::AA_CAP_DNS);
        }
        has
    })
    .unwrap_or(false);
    if !via_reactor {
        let owned = host.to_owned();
        return match offload("name resolution", move || std_lookup(&owned, port)) {
            Ok(Ok(r)) => r,
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            Err(e) => Err(e.into()),
        };
    }
    let found = lookup(host, at)?;
    Ok(found
        .into_iter()
        .map(|mut a| {
            a.set_port(port);
            a
        })
        .collect())
}

/// std's resolver, its failure worded as the reactor's (`dns_error`), so a
/// program sees the same line whichever path resolved the name.
fn std_lookup(host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
    std::net::ToSocketAddrs::to_socket_addrs(&(host, port))
        .map(Iterator::collect)
        .map_err(|e| {
            if e.kind() == io::ErrorKind::InvalidInput {
                return e;
            }
            let text = e.to_string();
            let why = text
                .strip_prefix("failed to lookup address information: ")
                .unwrap_or(&text);
            let mut chars = why.chars();
            let why = match chars.next() {
                Some(c) => c.to_lowercase().chain(chars).collect::<String>(),
                None => String::new(),
            };
            io::Error::new(
                e.kind(),
                format!("failed to lookup address information for \"{host}\": {why}"),
            )
        })
}

/// One lookup through the reactor, the coroutine suspended meanwhile.
fn lookup(host: &str, at: &'static Location<'static>) -> io::Result<Vec<SocketAddr>> {
    type Slot = Rc<RefCell<Option<Result<Vec<SocketAddr>, AaStatus>>>>;
    let slot: Slot = Rc::default();
    with_running(|rt, me| -> io::Result<Vec<SocketAddr>> {
        checkpoint(me).map_err(io::Error::from)?;
        let (s, who) = (slot.clone(), me.clone());
        // SOCK_STREAM: one entry per address (not one per socket type).
        let _event = rt
            .reactor
            .resolve(
                host,
                1,
                Box::new(move |status, addrs| {
                    let r = if status < 0 {
                        Err(status)
                    } else {
                        Ok(addrs.iter().filter_map(from_aa).collect())
                    };
                    *s.borrow_mut() = Some(r);
                    runtime::wake(&who);
                }),
            )
            .map_err(|status| dns_error(host, status))?;
        let what = format!("resolve {host}");
        loop {
            // Dropping `_event` on the way out abandons the lookup.
            suspend_once(rt, me, what.as_bytes(), at).map_err(io::Error::from)?;
            let done = slot.borrow_mut().take();
            match done {
                Some(Ok(addrs)) if addrs.is_empty() => {
                    return Err(dns_error(host, AA_E_DNS_NONAME));
                }
                Some(Ok(addrs)) => return Ok(addrs),
                Some(Err(status)) => return Err(dns_error(host, status)),
                None => {}
            }
        }
    })
    .expect("called inside a coroutine")
}

fn dns_error(host: &str, status: AaStatus) -> io::Error {
    let why = match status {
        AA_E_DNS_NONAME => "name or service not known".to_owned(),
        AA_E_DNS_AGAIN => "temporary failure in name resolution".to_owned(),
        AA_E_DNS_FAIL => "non-recoverable failure in name resolution".to_owned(),
        AA_E_DNS_FAMILY => "address family not supported".to_owned(),
        AA_E_UNSUPPORTED => "the reactor cannot resolve names".to_owned(),
        s => runtime::status_text(s),
    };
    io::Error::other(format!(
        "failed to lookup address information for \"{host}\": {why}"
    ))
}

#[cfg(test)]
mod tests {
    use super::sealed::Sealed;
    use super::*;

    #[test]
    fn host_and_port_split_like_std() {
        assert_eq!(split_host_port("localhost:80").unwrap(), ("localhost", 80));
        assert_eq!(
            split_host_port("localhost").unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
        assert_eq!(
            split_host_port("h:99999").unwrap_err().to_string(),
            "invalid port value"
        );
    }

    #[test]
    fn literals_never_resolve() {
        let at = Location::caller();
        let a: SocketAddr = "127.0.0.1:5".parse().unwrap();
        assert_eq!("127.0.0.1:5".to_addrs(at).unwrap(), [a]);
        assert_eq!(("127.0.0.1", 5).to_addrs(at).unwrap(), [a]);
        assert_eq!((Ipv4Addr::LOCALHOST, 5).to_addrs(at).unwrap(), [a]);
        assert_eq!(
            "[::1]:7".to_addrs(at).unwrap(),
            ["[::1]:7".parse::<SocketAddr>().unwrap()]
        );
    }
}
