//! Optional TLS for the bootstrap's connections, for a job whose PEs meet across hosts.
//!
//! With the cargo feature `tls` and the three settings below, every connection to PE 0's
//! bootstrap server is TLS 1.3 (rustls, with *ring*'s cryptography), authenticated both ways:
//! the server presents a certificate for the address the PEs dial (an IP address in its
//! subject alternative names), every PE presents one too, and each side accepts only
//! certificates signed by the job's certificate authority. A stranger without such a
//! certificate completes no handshake, so it reads nothing and sends nothing the server
//! parses; the job secret still travels in the greeting, now encrypted.
//!
//! | setting | what it names |
//! |---|---|
//! | `SHMEM_BOOTSTRAP_TLS_CA` | PEM file of the certificate authority that signs every certificate of the job |
//! | `SHMEM_BOOTSTRAP_TLS_CERT` | PEM file of this PE's certificate chain (PE 0's names the address the PEs dial) |
//! | `SHMEM_BOOTSTRAP_TLS_KEY` | PEM file of its private key |
//!
//! Without the feature, a job that sets any of them fails at init, naming the feature, rather
//! than talk in the clear when it was asked not to.

use std::sync::Arc;

use super::error::BootstrapError;

/// The settings, in the order the error messages list them.
const VARS: [&str; 3] = [
    "SHMEM_BOOTSTRAP_TLS_CA",
    "SHMEM_BOOTSTRAP_TLS_CERT",
    "SHMEM_BOOTSTRAP_TLS_KEY",
];

/// The job's TLS settings from the environment: `None` when none is set.
pub(crate) fn from_env() -> Result<Option<Arc<Tls>>, BootstrapError> {
    from_vars(|v| std::env::var(v).ok())
}

/// [`from_env`] with the settings that `get` gives.
pub(super) fn from_vars(
    get: impl Fn(&str) -> Option<String>,
) -> Result<Option<Arc<Tls>>, BootstrapError> {
    let values: Vec<Option<String>> = VARS
        .iter()
        .map(|v| get(v).filter(|s| !s.trim().is_empty()))
        .collect();
    match values.as_slice() {
        [None, None, None] => Ok(None),
        [Some(ca), Some(cert), Some(key)] => Tls::load(ca, cert, key).map(|t| Some(Arc::new(t))),
        _ => {
            let missing: Vec<&str> = VARS
                .iter()
                .zip(&values)
                .filter(|(_, v)| v.is_none())
                .map(|(n, _)| *n)
                .collect();
            Err(BootstrapError::invalid(format!(
                "TLS for the bootstrap needs {} as well",
                missing.join(" and ")
            )))
        }
    }
}

#[cfg(not(feature = "tls"))]
pub(crate) use off::{ClientSide, ServerSide, Tls};
#[cfg(feature = "tls")]
pub(crate) use on::{ClientSide, ServerSide, Tls};

/// The build without the feature: no value of these types exists.
#[cfg(not(feature = "tls"))]
mod off {
    use std::io;
    use std::net::{IpAddr, TcpStream};
    use std::time::Duration;

    use super::super::error::BootstrapError;
    use super::super::frames::FrameBuf;

    /// TLS settings (none exist in this build).
    #[derive(Debug)]
    pub(crate) enum Tls {}

    impl Tls {
        pub(crate) fn load(_: &str, _: &str, _: &str) -> Result<Tls, BootstrapError> {
            Err(BootstrapError::invalid(
                "SHMEM_BOOTSTRAP_TLS_* ask for TLS, but this build of the library has none (cargo feature `tls`)",
            ))
        }
    }

    /// The server's side of a TLS connection (none exist in this build).
    #[derive(Debug)]
    pub(crate) enum ServerSide {}

    impl ServerSide {
        pub(crate) fn new(t: &Tls) -> io::Result<ServerSide> {
            match *t {}
        }
        pub(crate) fn read_into(&mut self, _: &TcpStream, _: &mut FrameBuf) -> io::Result<usize> {
            match *self {}
        }
        pub(crate) fn send(&mut self, _: &TcpStream, _: &[u8]) -> io::Result<usize> {
            match *self {}
        }
        pub(crate) fn wants_write(&self) -> bool {
            match *self {}
        }
        pub(crate) fn flush(&mut self, _: &TcpStream) -> io::Result<()> {
            match *self {}
        }
    }

    /// A PE's side of a TLS connection (none exist in this build).
    #[derive(Debug)]
    pub(crate) enum ClientSide {}

    impl ClientSide {
        pub(crate) fn handshake(
            t: &Tls,
            _: &TcpStream,
            _: IpAddr,
            _: Duration,
        ) -> Result<ClientSide, BootstrapError> {
            match *t {}
        }
        pub(crate) fn read_into(&self, _: &TcpStream, _: &mut FrameBuf) -> io::Result<usize> {
            match *self {}
        }
        pub(crate) fn send(&self, _: &TcpStream, _: &[u8]) -> io::Result<()> {
            match *self {}
        }
    }
}

#[cfg(feature = "tls")]
mod on {
    use std::io::{self, ErrorKind, Read, Write};
    use std::net::{IpAddr, TcpStream};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
    use rustls::server::WebPkiClientVerifier;
    use rustls::{ClientConfig, ClientConnection, RootCertStore, ServerConfig, ServerConnection};

    use super::super::error::{BootstrapError, BootstrapErrorKind as Kind};
    use super::super::frames::FrameBuf;
    use super::super::lock;

    /// The job's TLS configuration: how PE 0's server and every PE's client talk.
    #[derive(Debug)]
    pub(crate) struct Tls {
        server: Arc<ServerConfig>,
        client: Arc<ClientConfig>,
    }

    fn bad(what: &str, path: &str, e: impl std::fmt::Display) -> BootstrapError {
        BootstrapError::invalid(format!("TLS for the bootstrap: {what} {path}: {e}"))
    }

    impl Tls {
        /// Reads the authority, the certificate chain and the key from PEM files.
        pub(crate) fn load(ca: &str, cert: &str, key: &str) -> Result<Tls, BootstrapError> {
            let mut roots = RootCertStore::empty();
            for c in certificates(ca)? {
                roots
                    .add(c)
                    .map_err(|e| bad("the authority is not usable in", ca, e))?;
            }
            let chain = certificates(cert)?;
            let key_der =
                PrivateKeyDer::from_pem_file(key).map_err(|e| bad("no private key in", key, e))?;
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let roots = Arc::new(roots);
            let verifier =
                WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone())
                    .build()
                    .map_err(|e| bad("the authority cannot verify PEs,", ca, e))?;
            let server = ServerConfig::builder_with_provider(provider.clone())
                .with_protocol_versions(&[&rustls::version::TLS13])
                .map_err(|e| bad("no TLS 1.3 for", cert, e))?
                .with_client_cert_verifier(verifier)
                .with_single_cert(chain.clone(), key_der.clone_key())
                .map_err(|e| bad("the certificate and key do not go together,", cert, e))?;
            let client = ClientConfig::builder_with_provider(provider)
                .with_protocol_versions(&[&rustls::version::TLS13])
                .map_err(|e| bad("no TLS 1.3 for", cert, e))?
                .with_root_certificates(roots)
                .with_client_auth_cert(chain, key_der)
                .map_err(|e| bad("the certificate and key do not go together,", cert, e))?;
            Ok(Tls {
                server: Arc::new(server),
                client: Arc::new(client),
            })
        }
    }

    /// The certificates of the PEM file `path`: at least one.
    fn certificates(path: &str) -> Result<Vec<CertificateDer<'static>>, BootstrapError> {
        let all: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
            .map_err(|e| bad("cannot read", path, e))?
            .collect::<Result<_, _>>()
            .map_err(|e| bad("cannot read", path, e))?;
        match all.is_empty() {
            true => Err(bad("no certificate in", path, "the file has none")),
            false => Ok(all),
        }
    }

    /// A TLS failure as an I/O error (the connection is unusable after it).
    fn tls_error(e: rustls::Error) -> io::Error {
        io::Error::new(ErrorKind::InvalidData, e)
    }

    /// Moves the plaintext rustls holds into `rbuf`: the bytes moved (possibly none), or
    /// `None` when the peer closed the TLS session and nothing is left.
    fn drain(reader: &mut rustls::Reader<'_>, rbuf: &mut FrameBuf) -> io::Result<Option<usize>> {
        let mut moved = 0;
        loop {
            match rbuf.read_from(reader) {
                Ok(0) if moved == 0 => return Ok(None),
                Ok(0) => return Ok(Some(moved)),
                Ok(n) => moved += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(Some(moved)),
                Err(e) => return Err(e),
            }
        }
    }

    /// The server's side of one connection, on a non-blocking socket.
    #[derive(Debug)]
    pub(crate) struct ServerSide(Box<ServerConnection>);

    impl ServerSide {
        pub(crate) fn new(t: &Tls) -> io::Result<ServerSide> {
            let c = ServerConnection::new(t.server.clone()).map_err(tls_error)?;
            Ok(ServerSide(Box::new(c)))
        }

        /// Reads what the socket has, and moves the plaintext into `rbuf`: `Ok(0)` when the
        /// peer closed, `WouldBlock` when nothing came.
        pub(crate) fn read_into(
            &mut self,
            mut stream: &TcpStream,
            rbuf: &mut FrameBuf,
        ) -> io::Result<usize> {
            let n = self.0.read_tls(&mut stream)?;
            if n == 0 {
                return Ok(0);
            }
            self.0.process_new_packets().map_err(tls_error)?;
            Ok(drain(&mut self.0.reader(), rbuf)?.map_or(0, |_| n))
        }

        /// Takes as much of `bytes` as the session buffers (`WouldBlock` if none, until the
        /// socket takes what it holds) and sends what the socket accepts now;
        /// [`ServerSide::wants_write`] says whether some is left for the next chance.
        pub(crate) fn send(&mut self, stream: &TcpStream, bytes: &[u8]) -> io::Result<usize> {
            self.flush(stream)?;
            let n = self.0.writer().write(bytes)?;
            self.flush(stream)?;
            match n {
                0 if !bytes.is_empty() => Err(ErrorKind::WouldBlock.into()),
                n => Ok(n),
            }
        }

        /// Sends the encrypted bytes the socket takes now.
        pub(crate) fn flush(&mut self, mut stream: &TcpStream) -> io::Result<()> {
            while self.0.wants_write() {
                match self.0.write_tls(&mut stream) {
                    Ok(_) => {}
                    Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        }

        /// Whether encrypted bytes wait for room in the socket (a handshake message, or
        /// plaintext taken by [`ServerSide::send`]).
        pub(crate) fn wants_write(&self) -> bool {
            self.0.wants_write()
        }
    }

    /// A PE's side of its connection to the server, on a blocking socket shared by the reader
    /// thread and the senders.
    #[derive(Debug)]
    pub(crate) struct ClientSide(Mutex<ClientConnection>);

    impl ClientSide {
        /// Runs the handshake with the server at `server` (whose certificate must name that
        /// address), each read and write bounded by `timeout`.
        pub(crate) fn handshake(
            t: &Tls,
            stream: &TcpStream,
            server: IpAddr,
            timeout: Duration,
        ) -> Result<ClientSide, BootstrapError> {
            let refused = |e: io::Error| {
                let m =
                    format!("the TLS handshake with the bootstrap server at {server} failed: {e}");
                // A certificate that does not verify does not verify on the next try either.
                let kind = match e.kind() {
                    ErrorKind::InvalidData => Kind::Invalid,
                    _ => Kind::Io,
                };
                BootstrapError::new(kind, m).with_source(e)
            };
            let name = ServerName::IpAddress(server.into());
            let mut c =
                ClientConnection::new(t.client.clone(), name).map_err(|e| refused(tls_error(e)))?;
            let mut s = stream;
            stream.set_read_timeout(Some(timeout)).map_err(refused)?;
            while c.is_handshaking() {
                c.complete_io(&mut s).map_err(refused)?;
            }
            // The reader thread waits as long as the server says nothing.
            stream.set_read_timeout(None).map_err(refused)?;
            Ok(ClientSide(Mutex::new(c)))
        }

        /// One blocking read from the socket, its plaintext moved into `rbuf`: `Ok(0)` when the
        /// server closed.
        pub(crate) fn read_into(
            &self,
            mut stream: &TcpStream,
            rbuf: &mut FrameBuf,
        ) -> io::Result<usize> {
            // Plaintext that arrived with the handshake is not waiting behind the socket.
            match drain(&mut lock(&self.0).reader(), rbuf) {
                Ok(Some(k @ 1..)) => return Ok(k),
                Ok(None) => return Ok(0),
                _ => {}
            }
            let mut raw = [0u8; 16 << 10];
            let n = stream.read(&mut raw)?;
            if n == 0 {
                return Ok(0);
            }
            let mut c = lock(&self.0);
            let mut rest = &raw[..n];
            while !rest.is_empty() {
                // Nothing taken: the session is closed (after the server's close_notify).
                if c.read_tls(&mut rest)? == 0 {
                    return Ok(0);
                }
                c.process_new_packets().map_err(tls_error)?;
                if drain(&mut c.reader(), rbuf)?.is_none() {
                    return Ok(0);
                }
            }
            // Whatever the session must answer (alerts, key updates) goes out now.
            while c.wants_write() {
                c.write_tls(&mut stream)?;
            }
            Ok(n)
        }

        /// Sends all of `bytes`, blocking as the socket's write timeout allows.
        pub(crate) fn send(&self, mut stream: &TcpStream, mut bytes: &[u8]) -> io::Result<()> {
            let mut c = lock(&self.0);
            loop {
                // The session takes plaintext up to its buffer's limit, then must send it.
                let n = c.writer().write(bytes)?;
                bytes = &bytes[n..];
                while c.wants_write() {
                    c.write_tls(&mut stream)?;
                }
                if bytes.is_empty() {
                    return Ok(());
                }
            }
        }
    }
}
