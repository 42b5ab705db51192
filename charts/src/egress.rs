//! Where a service that fetches what repositories name may go. A GitRepo's author chooses
//! the URLs gitjob fetches (its repository, remote Kustomize resources, Helm
//! repositories), so without a rule a GitRepo reads the service's own host: its loopback
//! ports, the cloud's metadata address, a directory on its disk, gitjob's own mirrors of
//! other tenants' private repositories. [`Egress::Public`] refuses those; an operator who
//! serves charts or repositories on the same machine allows them.

use std::net::{IpAddr, ToSocketAddrs};

/// Which targets may be fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Egress {
    /// Anything, local paths and loopback included (a developer's machine, `fleet up`).
    #[default]
    Anywhere,
    /// Remote hosts only: no local paths or `file://` URLs, no host that resolves to a
    /// loopback, link-local or unspecified address.
    Public,
}

impl Egress {
    /// `Public` unless `allow_local`.
    pub fn allowing_local(allow_local: bool) -> Self {
        if allow_local {
            Egress::Anywhere
        } else {
            Egress::Public
        }
    }

    /// Whether `url` (an HTTP(S) URL, or a Git URL in any of Git's forms: `https://`,
    /// `ssh://`, `git://`, `user@host:path`, `file://` or a path) may be fetched; the reason
    /// when not.
    pub fn check(self, url: &str) -> Result<(), String> {
        if self == Egress::Anywhere {
            return Ok(());
        }
        let Some((host, port)) = remote_host(url) else {
            return Err(format!(
                "{url} is on this machine: local paths are not fetched (an operator may allow them)"
            ));
        };
        let addresses: Vec<IpAddr> = (host.as_str(), port)
            .to_socket_addrs()
            .map_err(|e| format!("{url}: resolving {host}: {e}"))?
            .map(|a| a.ip())
            .collect();
        match addresses.iter().find(|ip| is_local(ip)) {
            Some(ip) => Err(format!(
                "{url}: {host} is {ip}, an address of this machine or its link: not fetched (an operator may allow local targets)"
            )),
            None => Ok(()),
        }
    }
}

/// Names resolved for the chart fetcher's requests, refusing under [`Egress::Public`] a
/// name that resolves to an address of this machine. [`Egress::check`] resolves a URL's
/// host before the request, and the request resolves it again: a name whose answer changes
/// in between (DNS rebinding) is caught here, on the addresses actually connected to.
#[derive(Debug, Default)]
pub(crate) struct CheckedResolver {
    egress: Egress,
    system: ureq::unversioned::resolver::DefaultResolver,
}

impl CheckedResolver {
    /// A resolver refusing what `egress` refuses.
    pub(crate) fn new(egress: Egress) -> Self {
        Self {
            egress,
            system: Default::default(),
        }
    }
}

impl ureq::unversioned::resolver::Resolver for CheckedResolver {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        config: &ureq::config::Config,
        timeout: ureq::unversioned::transport::NextTimeout,
    ) -> Result<ureq::unversioned::resolver::ResolvedSocketAddrs, ureq::Error> {
        let addresses = self.system.resolve(uri, config, timeout)?;
        if self.egress == Egress::Public {
            if let Some(local) = addresses.iter().find(|a| is_local(&a.ip())) {
                return Err(ureq::Error::Io(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    format!(
                        "{} is {}, an address of this machine or its link: not fetched",
                        uri.host().unwrap_or_default(),
                        local.ip()
                    ),
                )));
            }
        }
        Ok(addresses)
    }
}

/// Loopback, link-local (the cloud metadata address among them) or unspecified, in IPv4,
/// IPv6 or IPv4 mapped into IPv6.
fn is_local(ip: &IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback() || v4.is_link_local() || v4.is_unspecified(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_local(&IpAddr::V4(v4)),
            None => {
                v6.is_loopback() || v6.is_unspecified() || (v6.segments()[0] & 0xffc0) == 0xfe80
            }
        },
    }
}

/// The host and port a URL names, or `None` for a local path or `file://` URL.
fn remote_host(url: &str) -> Option<(String, u16)> {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (scheme.to_ascii_lowercase(), rest),
        // `user@host:path` (scp-like) names a host; anything else without a scheme is a path.
        None => {
            let (before, _) = url.split_once(':')?;
            if before.contains('/') || before.is_empty() {
                return None;
            }
            return Some((strip_user(before).to_string(), 22));
        }
    };
    let port = match scheme.as_str() {
        "file" => return None,
        "http" => 80,
        "ssh" | "git+ssh" => 22,
        "git" => 9418,
        _ => 443,
    };
    let authority = strip_user(rest.split(['/', '?', '#']).next().unwrap_or_default());
    if authority.is_empty() {
        return None;
    }
    if let Some(bracketed) = authority.strip_prefix('[') {
        let (host, after) = bracketed.split_once(']')?;
        let given = after.strip_prefix(':').and_then(|p| p.parse().ok());
        return Some((host.to_string(), given.unwrap_or(port)));
    }
    match authority.rsplit_once(':') {
        Some((host, given)) => Some((host.to_string(), given.parse().unwrap_or(port))),
        None => Some((authority.to_string(), port)),
    }
}

fn strip_user(authority: &str) -> &str {
    authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_paths_and_addresses_are_refused_remote_hosts_are_not() {
        let public = Egress::Public;
        for refused in [
            "/srv/git/private",
            "file:///srv/git/private",
            "../mirror",
            "http://127.0.0.1:8080/index.yaml",
            "https://localhost/charts",
            "git://[::1]/repo",
            "http://169.254.169.254/latest/meta-data/",
            "http://0.0.0.0:9000/x",
            "git@127.0.0.1:org/repo.git",
            "ssh://git@localhost:2222/repo",
            "http://[::ffff:127.0.0.1]/x",
        ] {
            assert!(public.check(refused).is_err(), "{refused}");
        }
        for allowed in [
            "https://10.1.2.3/charts",
            "http://192.168.1.10:8080/index.yaml",
            "git@10.0.0.5:org/repo.git",
        ] {
            assert_eq!(public.check(allowed), Ok(()), "{allowed}");
        }
        assert_eq!(Egress::Anywhere.check("/srv/git/private"), Ok(()));
        assert_eq!(Egress::Anywhere.check("http://127.0.0.1/x"), Ok(()));
    }
}
