//! Certificates for the TLS tests, made with rcgen: one authority and one certificate it
//! signed for 127.0.0.1 (the server's and every PE's), as PEM files in a directory of their
//! own, removed on drop. Shared by the core's unit tests (`bootstrap::tests::over_tls`) and
//! its integration tests (`tests/security.rs`).

use std::path::PathBuf;

/// `ca.pem`, `cert.pem` and `key.pem` in a directory of their own.
pub(crate) struct Pki {
    dir: PathBuf,
}

impl Pki {
    /// A new authority and certificate, in a directory whose name has `name`.
    pub(crate) fn new(name: &str) -> Pki {
        let dir = std::env::temp_dir().join(format!(
            "shmem-tls-{name}-{}-{}",
            std::process::id(),
            rand::random::<u32>()
        ));
        std::fs::create_dir_all(&dir).expect("a directory");
        let ca_key = rcgen::KeyPair::generate().expect("a key");
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca_cert = ca.self_signed(&ca_key).expect("a CA");
        let key = rcgen::KeyPair::generate().expect("a key");
        let leaf = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()]).expect("params");
        let cert = leaf
            .signed_by(&key, &ca_cert, &ca_key)
            .expect("a certificate");
        let write = |f: &str, text: String| std::fs::write(dir.join(f), text).expect("write");
        write("ca.pem", ca_cert.pem());
        write("cert.pem", cert.pem());
        write("key.pem", key.serialize_pem());
        Pki { dir }
    }

    /// The path of file `f` (`ca.pem`, `cert.pem`, `key.pem`).
    pub(crate) fn path(&self, f: &str) -> String {
        self.dir.join(f).to_str().expect("UTF-8").to_owned()
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
