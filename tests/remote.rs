//! The `rntuple` command on files served over HTTP: a small server on the
//! loopback interface answers HEAD and ranged GET requests for the fixtures,
//! and every subcommand must print what it prints for the local file.

#![cfg(feature = "cli")]

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// An HTTP server of some files, counting the requests and body bytes it sends.
struct Server {
    base: String,
    requests: Arc<AtomicU64>,
    sent: Arc<AtomicU64>,
}

impl Server {
    /// Serves `files` (URL path -> bytes) on a free port of 127.0.0.1.
    fn start(files: HashMap<String, Vec<u8>>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let files = Arc::new(files);
        let requests = Arc::new(AtomicU64::new(0));
        let sent = Arc::new(AtomicU64::new(0));
        let (r, s) = (requests.clone(), sent.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (files, r, s) = (files.clone(), r.clone(), s.clone());
                std::thread::spawn(move || serve(stream, &files, &r, &s));
            }
        });
        Server {
            base,
            requests,
            sent,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.base)
    }
}

/// Answers the requests of one connection (kept alive) until it closes.
fn serve(
    stream: TcpStream,
    files: &HashMap<String, Vec<u8>>,
    requests: &AtomicU64,
    sent: &AtomicU64,
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut out = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let (method, path) = (
            parts.next().unwrap_or("").to_string(),
            parts.next().unwrap_or("").to_string(),
        );
        let mut range = None;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("range") {
                    let spec = value.trim().trim_start_matches("bytes=");
                    let (a, b) = spec.split_once('-').unwrap();
                    range = Some((a.parse::<usize>().unwrap(), b.parse::<usize>().unwrap()));
                }
            }
        }
        requests.fetch_add(1, Ordering::Relaxed);
        let Some(body) = files.get(path.trim_start_matches('/')) else {
            let _ = out.write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n");
            continue;
        };
        let common = "accept-ranges: bytes\r\nlast-modified: Mon, 07 Dec 2026 00:00:00 GMT\r\netag: \"1\"\r\n";
        let head = method == "HEAD";
        let response = match range {
            Some((a, b)) if a < body.len() => {
                let b = b.min(body.len() - 1);
                let part = &body[a..=b];
                let header = format!(
                    "HTTP/1.1 206 Partial Content\r\n{common}content-range: bytes {a}-{b}/{}\r\ncontent-length: {}\r\n\r\n",
                    body.len(),
                    part.len()
                );
                (header, if head { &[][..] } else { part })
            }
            Some(_) => (
                format!("HTTP/1.1 416 Range Not Satisfiable\r\ncontent-range: bytes */{}\r\ncontent-length: 0\r\n\r\n", body.len()),
                &[][..],
            ),
            None => (
                format!("HTTP/1.1 200 OK\r\n{common}content-length: {}\r\n\r\n", body.len()),
                if head { &[][..] } else { &body[..] },
            ),
        };
        sent.fetch_add(response.1.len() as u64, Ordering::Relaxed);
        if out.write_all(response.0.as_bytes()).is_err() || out.write_all(response.1).is_err() {
            return;
        }
    }
}

/// A server of the ADL fixture at `adl/nanoaod_events.root`.
fn adl_server() -> (Server, PathBuf) {
    let path = common::data_dir().join("adl/nanoaod_events.root");
    let bytes = std::fs::read(&path).unwrap();
    let server = Server::start(HashMap::from([(
        "adl/nanoaod_events.root".to_string(),
        bytes,
    )]));
    (server, path)
}

/// Runs the command, expecting success; returns stdout.
fn run_ok(args: &[&str]) -> Vec<u8> {
    let out = common::rntuple_command().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "rntuple {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Runs the command, expecting one `rntuple:` line on stderr; returns it.
fn run_err(args: &[&str]) -> String {
    let out = common::rntuple_command().args(args).output().unwrap();
    assert!(!out.status.success(), "rntuple {args:?} should fail");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("rntuple: "), "{stderr}");
    stderr
}

#[test]
fn metadata_commands_read_a_file_over_http_as_a_local_one() {
    let (server, path) = adl_server();
    let url = server.url("adl/nanoaod_events.root");
    let local = path.to_str().unwrap();
    for command in [&["ls"][..], &["schema"], &["info"]] {
        let remote = String::from_utf8(run_ok(&[command, &[url.as_str()]].concat())).unwrap();
        let here = String::from_utf8(run_ok(&[command, &[local]].concat())).unwrap();
        // Tables are as wide as the file's name: compare the words.
        let words = |text: &str, name: &str| -> Vec<String> {
            let text = text.replace(name, "FILE");
            text.lines()
                .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
                .collect()
        };
        assert_eq!(words(&remote, &url), words(&here, local), "{command:?}");
    }
    // Blocks, not one request per read: the file (half a MiB) is one block,
    // which tells its size too, so each of the three commands takes one GET.
    let requests = server.requests.load(Ordering::Relaxed);
    assert_eq!(requests, 3, "requests for ls, schema and info");
    let size = std::fs::metadata(&path).unwrap().len();
    assert_eq!(server.sent.load(Ordering::Relaxed), 3 * size);
}

#[test]
fn cat_and_export_read_a_file_over_http_as_a_local_one() {
    let (server, path) = adl_server();
    let url = server.url("adl/nanoaod_events.root");
    let local = path.to_str().unwrap();
    for args in [
        &["cat", "-n", "20", "--format", "jsonl"][..],
        &["cat", "--columns", "nJet,MET_pt,event", "--format", "csv"],
        &[
            "cat",
            "-n",
            "100",
            "--columns",
            "Jet_pt,Muon_pt",
            "--format",
            "jsonl",
        ],
        &["export", "--format", "arrow-stream", "-o", "-"],
    ] {
        let remote = run_ok(&[args, &[url.as_str()]].concat());
        let here = run_ok(&[args, &[local]].concat());
        assert!(!here.is_empty());
        assert!(
            remote == here,
            "{args:?}: the remote file printed other bytes"
        );
    }
}

#[test]
fn sql_reads_tables_over_http() {
    let (server, path) = adl_server();
    let url = server.url("adl/nanoaod_events.root");
    let local = path.to_str().unwrap();
    let query = "SELECT nJet, count(*) AS n, sum(MET_pt) AS met FROM e GROUP BY nJet ORDER BY nJet";
    assert_same_csv(&[&format!("e={url}")], &[&format!("e={local}")], query);
    // A file given bare is a table under its RNTuple's name.
    let count = "SELECT count(*) AS n, max(event) AS last FROM Events";
    let before = server.requests.load(Ordering::Relaxed);
    let remote = run_ok(&["sql", &url, "-c", count, "--format", "csv"]);
    let here = run_ok(&["sql", local, "-c", count, "--format", "csv"]);
    assert_eq!(remote, here);
    // Its metadata is read once: the file's size (HEAD), the file (small
    // enough to be fetched whole) and its sidecar index at once, and the
    // size again when the query is planned, to see that it has not changed.
    let requests = server.requests.load(Ordering::Relaxed) - before;
    assert_eq!(requests, 4, "requests for a bare file's query");
    // CREATE EXTERNAL TABLE finds the store of the URL too.
    let create = format!("CREATE EXTERNAL TABLE t STORED AS RNTUPLE LOCATION '{url}'");
    let select = "SELECT count(*) AS n, sum(nMuon) AS muons FROM t";
    assert_same_csv(
        &[],
        &[&format!("t={local}")],
        &format!("{create}; {select}"),
    );
}

/// EOS gives its web URLs a path that starts with `//`: they read as the
/// same URL with one slash, for the command's FILE, `--table` and SQL's
/// `LOCATION`.
#[test]
fn web_urls_with_empty_path_segments_read_as_with_one_slash() {
    let (server, path) = adl_server();
    let url = server.url("adl/nanoaod_events.root");
    let doubled = url.replacen("/adl/", "//adl//", 1);
    assert!(doubled.contains("//adl//"), "{doubled}");
    let local = path.to_str().unwrap();
    let remote = String::from_utf8(run_ok(&["schema", &doubled])).unwrap();
    let here = String::from_utf8(run_ok(&["schema", local])).unwrap();
    // The title names the file as given.
    assert!(remote.contains(&doubled), "{remote}");
    let body = |text: &str| text.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert_eq!(body(&remote), body(&here));
    assert!(body(&here).contains("Jet_pt"));
    let query = "SELECT count(*) AS n, sum(MET_pt) AS met FROM e";
    assert_same_csv(&[&format!("e={doubled}")], &[&format!("e={local}")], query);
    let create = format!("CREATE EXTERNAL TABLE e STORED AS RNTUPLE LOCATION '{doubled}'");
    assert_same_csv(&[], &[&format!("e={local}")], &format!("{create}; {query}"));
}

/// Runs `query` as CSV over the tables `remote` and over `local` (the
/// statements before its last `;` run only over `remote`) and asserts the
/// same output.
fn assert_same_csv(remote: &[&str], local: &[&str], query: &str) {
    let run = |tables: &[&str], query: &str| -> String {
        let mut args = vec!["sql"];
        for table in tables {
            args.extend(["--table", table]);
        }
        args.extend(["-c", query, "--format", "csv"]);
        String::from_utf8(run_ok(&args)).unwrap()
    };
    let last = query.rsplit(';').next().unwrap_or(query).trim();
    let out = run(remote, query);
    assert!(out.lines().count() > 1, "{out}");
    assert_eq!(out, run(local, last));
}

#[test]
fn missing_files_and_unknown_schemes_are_one_line_errors() {
    let (server, _) = adl_server();
    let missing = server.url("nowhere.root");
    let line = run_err(&["info", &missing]);
    assert!(line.contains(&missing), "{line}");
    let line = run_err(&["sql", "--table", &format!("t={missing}"), "-c", "SELECT 1"]);
    assert!(
        line.contains("nowhere.root") && line.contains("no such file on the server"),
        "{line}"
    );
    let line = run_err(&["sql", &missing, "-c", "SELECT 1"]);
    assert_eq!(
        line.trim_end(),
        format!("rntuple: {missing}: no such file on the server")
    );
    let line = run_err(&["schema", "gopher://example.org/x.root"]);
    assert!(
        line.contains("no object store for gopher://example.org"),
        "{line}"
    );
    let line = run_err(&[
        "sql",
        "--table",
        "t=gopher://example.org/x.root",
        "-c",
        "SELECT 1",
    ]);
    assert!(
        line.contains("no object store for gopher://example.org"),
        "{line}"
    );
    assert!(!line.contains("Internal error"), "{line}");
    // XRootD's paths start with `//`: the error says what reads them.
    for args in [
        &["info", "root://eospublic.cern.ch//eos/x.root"][..],
        &[
            "sql",
            "--table",
            "t=root://eospublic.cern.ch//eos/x.root",
            "-c",
            "SELECT 1",
        ],
    ] {
        let line = run_err(args);
        assert!(
            line.contains("no object store for root://eospublic.cern.ch")
                && line.contains("over https://"),
            "{line}"
        );
    }
    let line = run_err(&["index", &server.url("adl/nanoaod_events.root")]);
    assert!(line.contains("only local files can be indexed"), "{line}");
}
