//! Which object store serves a URL, for the sessions of
//! [`session_context`](super::session_context).
//!
//! ```text
//!  get_store(url) ── registered for scheme://host? ── yes ─> that store
//!                                │ no
//!                                ▼
//!        http(s)://host  ─> HttpStore for the host (range GETs; feature `remote`)
//!        s3://bucket     ─> AmazonS3 from the AWS_* environment (feature `remote`)
//!        gs://bucket     ─> GoogleCloudStorage from the GOOGLE_* environment
//!        az://container  ─> MicrosoftAzure from the AZURE_* environment
//!        anything else   ─> an error naming the URL and what can read it
//! ```
//!
//! A store made for a URL is kept for the later URLs of the same scheme
//! and host. Stores registered with `RuntimeEnv::register_object_store`
//! come first, as in DataFusion's own registry.
//!
//! Web locations are read with the empty segments of their paths left out
//! ([`web_location`]): EOS hands out `https://host//eos/...`, which its
//! server reads as `/eos/...`, and an object's path has no empty segments.

use std::borrow::Cow;
use std::sync::Arc;

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::object_store::{DefaultObjectStoreRegistry, ObjectStoreRegistry};
use object_store::ObjectStore;
use url::Url;

/// DataFusion's registry of object stores, which also makes the stores of
/// http(s):// and s3:// URLs when they are first asked for (with the
/// feature `remote`), and otherwise says which URLs it can read.
#[derive(Debug, Default)]
pub struct StoreRegistry {
    stores: DefaultObjectStoreRegistry,
}

impl StoreRegistry {
    /// A registry with the local file system (`file://`) registered.
    pub fn new() -> Self {
        Self::default()
    }
}

/// `location` with runs of `/` in the path of an `http(s)://` URL made one:
/// `https://host//eos/f.root` names `https://host/eos/f.root`, as web
/// servers read it (EOS among them), and as an object store can name it.
/// Other locations, and URLs that do not parse, are returned as they are.
pub fn web_location(location: &str) -> Cow<'_, str> {
    let Ok(mut url) = Url::parse(location) else {
        return Cow::Borrowed(location);
    };
    if !matches!(url.scheme(), "http" | "https") || !url.path().contains("//") {
        return Cow::Borrowed(location);
    }
    let segments: Vec<&str> = url.path().split('/').filter(|s| !s.is_empty()).collect();
    let mut path = format!("/{}", segments.join("/"));
    // A directory stays one.
    if url.path().ends_with('/') && !segments.is_empty() {
        path.push('/');
    }
    url.set_path(&path);
    Cow::Owned(url.to_string())
}

impl ObjectStoreRegistry for StoreRegistry {
    fn register_store(
        &self,
        url: &Url,
        store: Arc<dyn ObjectStore>,
    ) -> Option<Arc<dyn ObjectStore>> {
        self.stores.register_store(url, store)
    }

    fn deregister_store(&self, url: &Url) -> Result<Arc<dyn ObjectStore>> {
        self.stores.deregister_store(url)
    }

    fn get_store(&self, url: &Url) -> Result<Arc<dyn ObjectStore>> {
        if let Ok(store) = self.stores.get_store(url) {
            return Ok(store);
        }
        let store = store_for(url)?;
        // Two scans asking at once may both build one; the second one
        // registered is the one kept, and either serves.
        self.stores.register_store(url, store.clone());
        Ok(store)
    }
}

/// Retries of a failed HTTP request (object_store's default is 10). A
/// plain web server answers a listing (WebDAV's PROPFIND, which DataFusion
/// tries when a file is not found) with 501, and ten retries of that took
/// 5 s before the error.
#[cfg(feature = "remote")]
const HTTP_RETRIES: usize = 2;

/// A new store for the scheme and host of `url`.
#[cfg(feature = "remote")]
fn store_for(url: &Url) -> Result<Arc<dyn ObjectStore>> {
    use object_store::aws::AmazonS3Builder;
    use object_store::azure::MicrosoftAzureBuilder;
    use object_store::gcp::GoogleCloudStorageBuilder;
    use object_store::http::HttpBuilder;
    use object_store::{ClientOptions, RetryConfig};

    let built = match url.scheme() {
        "http" | "https" => {
            let origin = &url[..url::Position::BeforePath];
            HttpBuilder::new()
                .with_url(origin)
                .with_client_options(ClientOptions::new().with_allow_http(url.scheme() == "http"))
                .with_retry(RetryConfig {
                    max_retries: HTTP_RETRIES,
                    ..RetryConfig::default()
                })
                .build()
                .map(|store| Arc::new(store) as Arc<dyn ObjectStore>)
        }
        "s3" | "s3a" => {
            let bucket = url.host_str().unwrap_or_default();
            AmazonS3Builder::from_env()
                .with_bucket_name(bucket)
                .build()
                .map(|store| Arc::new(store) as Arc<dyn ObjectStore>)
        }
        "gs" => GoogleCloudStorageBuilder::from_env()
            .with_url(url.as_str())
            .build()
            .map(|store| Arc::new(store) as Arc<dyn ObjectStore>),
        // Not abfs(s)://container@account: stores are kept by scheme and
        // host, which would give two containers of an account one store.
        "az" => MicrosoftAzureBuilder::from_env()
            .with_url(url.as_str())
            .build()
            .map(|store| Arc::new(store) as Arc<dyn ObjectStore>),
        _ => return Err(unsupported(url)),
    };
    built
        .map_err(|e| DataFusionError::Configuration(format!("cannot read {}: {e}", origin_of(url))))
}

/// Without the feature `remote`, only stores registered by hand.
#[cfg(not(feature = "remote"))]
fn store_for(url: &Url) -> Result<Arc<dyn ObjectStore>> {
    Err(unsupported(url))
}

/// The error for a URL no store can be made for.
fn unsupported(url: &Url) -> DataFusionError {
    let readable = if cfg!(feature = "remote") {
        "local paths, http(s)://, s3://, gs:// and az:// URLs"
    } else {
        "local paths (URLs with the feature `remote`)"
    };
    let hint = match url.scheme() {
        "root" | "xroot" => "; XRootD servers such as EOS serve the same files over https://",
        _ => "",
    };
    DataFusionError::Configuration(format!(
        "no object store for {}: this session reads {readable}; register a store \
         for others with `RuntimeEnv::register_object_store`{hint}",
        origin_of(url)
    ))
}

/// A table's location as DataFusion is to parse it: a web URL without
/// empty path segments ([`web_location`]). An XRootD URL, whose path
/// conventionally starts with `//`, gets the error that no store reads it
/// instead of DataFusion's complaint about the empty segment.
pub(crate) fn table_location(location: &str) -> Result<Cow<'_, str>> {
    match Url::parse(location) {
        Ok(url) if matches!(url.scheme(), "root" | "xroot") => Err(unsupported(&url)),
        _ => Ok(web_location(location)),
    }
}

/// The scheme and host of `url`, without credentials.
fn origin_of(url: &Url) -> String {
    format!(
        "{}://{}",
        url.scheme(),
        &url[url::Position::BeforeHost..url::Position::AfterPort]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn web_locations_lose_their_empty_segments() {
        let cases = [
            (
                "https://eospublic.cern.ch//eos/opendata/f.root",
                "https://eospublic.cern.ch/eos/opendata/f.root",
            ),
            (
                "http://h:8080/a//b///c.root?x=1",
                "http://h:8080/a/b/c.root?x=1",
            ),
            ("https://h//dir//", "https://h/dir/"),
            ("https://h/a/b.root", "https://h/a/b.root"),
            ("s3://bucket//a.root", "s3://bucket//a.root"),
            ("/local//path.root", "/local//path.root"),
        ];
        for (given, expected) in cases {
            assert_eq!(web_location(given), expected, "{given}");
        }
    }

    #[test]
    fn local_files_and_registered_stores_come_first() -> Result<()> {
        let registry = StoreRegistry::new();
        let local = Url::parse("file:///tmp/x.root").unwrap();
        assert!(registry.get_store(&local).is_ok());
        let memory: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
        let url = Url::parse("memory://bucket/").unwrap();
        assert!(registry.get_store(&url).is_err());
        registry.register_store(&url, memory.clone());
        assert!(Arc::ptr_eq(&registry.get_store(&url)?, &memory));
        Ok(())
    }

    #[test]
    fn unknown_schemes_are_refused_by_name_without_credentials() {
        let registry = StoreRegistry::new();
        let url = Url::parse("gopher://user:secret@host:70/data/x.root").unwrap();
        let message = registry.get_store(&url).unwrap_err().to_string();
        assert!(
            message.contains("no object store for gopher://host:70"),
            "{message}"
        );
        assert!(!message.contains("secret"), "{message}");
        assert!(!message.contains("Internal"), "{message}");
    }

    #[cfg(feature = "remote")]
    #[test]
    fn http_and_s3_stores_are_made_once_per_host() -> Result<()> {
        let registry = StoreRegistry::new();
        let a = Url::parse("https://example.org/data/a.root").unwrap();
        let b = Url::parse("https://example.org/other/b.root").unwrap();
        let first = registry.get_store(&a)?;
        assert!(Arc::ptr_eq(&first, &registry.get_store(&b)?));
        let elsewhere = Url::parse("https://example.com/a.root").unwrap();
        assert!(!Arc::ptr_eq(&first, &registry.get_store(&elsewhere)?));
        let s3 = Url::parse("s3://bucket/run1/a.root").unwrap();
        assert!(registry.get_store(&s3).is_ok());
        Ok(())
    }

    /// Google Cloud Storage and Azure: the stores are made without a
    /// request (credentials are looked up when a request needs them).
    #[cfg(feature = "remote")]
    #[test]
    fn gcs_and_azure_stores_are_made() -> Result<()> {
        let registry = StoreRegistry::new();
        let gs = Url::parse("gs://bucket/run1/a.root").unwrap();
        let gs_store = registry.get_store(&gs)?;
        assert!(gs_store.to_string().contains("bucket"), "{gs_store}");
        // The account comes from AZURE_STORAGE_ACCOUNT_NAME: without it,
        // an error that names the container.
        let az = Url::parse("az://container/run1/a.root").unwrap();
        match registry.get_store(&az) {
            Ok(azure) => assert!(azure.to_string().contains("container"), "{azure}"),
            Err(e) => assert!(e.to_string().contains("cannot read az://container"), "{e}"),
        }
        let abfss = Url::parse("abfss://c@account.dfs.core.windows.net/a.root").unwrap();
        let e = registry.get_store(&abfss).unwrap_err().to_string();
        assert!(e.contains("no object store for abfss://"), "{e}");
        Ok(())
    }
}
