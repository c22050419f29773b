//! Running cargo: metadata, builds with JSON messages, rustflags.

use crate::progress;
use anyhow::{bail, Context, Result};
use cargo_metadata::diagnostic::Diagnostic;
use cargo_metadata::Message;
use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The cargo to run: `$CARGO` when cargo started us, else `cargo`.
pub fn cargo_path() -> PathBuf {
    std::env::var_os("CARGO").map(PathBuf::from).unwrap_or_else(|| "cargo".into())
}

/// `rustc --version --verbose`, first line: the toolchain recorded in the descriptors.
pub fn rustc_version() -> Result<String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(&rustc).arg("-vV").output().with_context(|| format!("cannot run {rustc:?}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.lines().next().unwrap_or_default().to_string();
    if !out.status.success() || first.is_empty() {
        bail!("`{} -vV` failed", rustc.to_string_lossy());
    }
    Ok(first)
}

/// How the user's rustflags reach cargo, with ours appended.
#[derive(Clone, Debug)]
pub enum RustFlags {
    /// The user set `CARGO_ENCODED_RUSTFLAGS` or `RUSTFLAGS`: extend it.
    Env(String),
    /// Otherwise: `--config build.rustflags=[...]`, which cargo appends to
    /// the `build.rustflags` of the user's config files.
    Config(String),
}

impl RustFlags {
    pub fn with(extra: &[String]) -> RustFlags {
        let env_flags: Option<Vec<String>> = match std::env::var("CARGO_ENCODED_RUSTFLAGS") {
            Ok(s) => Some(if s.is_empty() { Vec::new() } else { s.split('\x1f').map(String::from).collect() }),
            Err(_) => std::env::var("RUSTFLAGS").ok().map(|s| s.split_whitespace().map(String::from).collect()),
        };
        match env_flags {
            Some(mut flags) => {
                flags.extend(extra.iter().cloned());
                RustFlags::Env(flags.join("\x1f"))
            }
            None => {
                let items: Vec<String> = extra.iter().map(|f| format!("{f:?}")).collect();
                RustFlags::Config(format!("build.rustflags=[{}]", items.join(", ")))
            }
        }
    }

    fn apply(&self, cmd: &mut Command) {
        match self {
            RustFlags::Env(s) => {
                cmd.env_remove("RUSTFLAGS");
                cmd.env("CARGO_ENCODED_RUSTFLAGS", s);
            }
            RustFlags::Config(c) => {
                cmd.arg("--config").arg(c);
            }
        }
    }
}

/// One artefact cargo reported.
#[derive(Debug, Clone)]
pub struct Artefact {
    pub target_name: String,
    pub kinds: Vec<String>,
    pub files: Vec<PathBuf>,
    pub executable: Option<PathBuf>,
}

/// Runs `cargo build` with `--message-format=json-render-diagnostics`
/// (cargo prints compiler messages itself) and returns the artefacts. While a progress line
/// is drawn (see [`progress`]) cargo runs quietly and its compiler messages are printed above
/// the line instead.
pub fn build(
    cwd: &Path,
    args: &[OsString],
    flags: &RustFlags,
    env: &[(&str, OsString)],
    quiet: bool,
) -> Result<Vec<Artefact>> {
    run_build(cwd, args, flags, env, quiet, None)
}

/// [`build`], also returning rustc's diagnostics (printed as cargo would print them).
pub fn build_collecting(
    cwd: &Path,
    args: &[OsString],
    flags: &RustFlags,
    env: &[(&str, OsString)],
    quiet: bool,
) -> Result<(Vec<Artefact>, Vec<Diagnostic>)> {
    let mut diagnostics = Vec::new();
    let artefacts = run_build(cwd, args, flags, env, quiet, Some(&mut diagnostics))?;
    Ok((artefacts, diagnostics))
}

fn run_build(
    cwd: &Path,
    args: &[OsString],
    flags: &RustFlags,
    env: &[(&str, OsString)],
    quiet: bool,
    mut diagnostics: Option<&mut Vec<Diagnostic>>,
) -> Result<Vec<Artefact>> {
    let progress = progress::active();
    // Compiler messages come back as JSON when we keep them or print them above the
    // progress line; cargo renders them as it would on its own (in colour on a terminal).
    let format = if !progress && diagnostics.is_none() {
        "--message-format=json-render-diagnostics"
    } else if std::io::stderr().is_terminal() {
        "--message-format=json-diagnostic-rendered-ansi"
    } else {
        "--message-format=json"
    };
    let mut cmd = Command::new(cargo_path());
    cmd.current_dir(cwd).arg("build").arg(format).args(args);
    if quiet || progress {
        cmd.arg("--quiet");
    }
    flags.apply(&mut cmd);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.stdout(Stdio::piped()).stderr(Stdio::inherit());
    let mut child = cmd.spawn().context("cannot run cargo")?;
    let stdout = child.stdout.take().expect("piped");
    let mut artefacts = Vec::new();
    for message in Message::parse_stream(std::io::BufReader::new(stdout)) {
        match message.context("reading cargo's JSON messages")? {
            Message::CompilerArtifact(a) => {
                progress::crate_done(&a.target.name);
                artefacts.push(Artefact {
                    target_name: a.target.name.clone(),
                    kinds: a.target.kind.iter().map(|k| k.to_string()).collect(),
                    files: a.filenames.iter().map(|f| f.clone().into_std_path_buf()).collect(),
                    executable: a.executable.map(|e| e.into_std_path_buf()),
                });
            }
            Message::CompilerMessage(m) => {
                if let Some(rendered) = &m.message.rendered {
                    progress::print(rendered);
                }
                if let Some(d) = diagnostics.as_deref_mut() {
                    d.push(m.message);
                }
            }
            _ => {}
        }
    }
    let status = child.wait()?;
    if !status.success() {
        bail!("cargo build failed ({status})");
    }
    Ok(artefacts)
}
