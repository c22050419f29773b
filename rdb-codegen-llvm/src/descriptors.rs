//! Writes `<prog>.rdb-functions.json` and `<prog>.rdb-arguments.json`: the
//! region sites the source pass and the IR pass produced (ids, entries,
//! source positions, argument names and kinds) handed to `rdb-locate`, which
//! reads code and argument locations from the DWARF of the main binary (or of
//! its `-g` twin, whose code it has checked identical).

use crate::callbacks::{Kind, Spec};
use rdb_descriptors::{
    ArtefactPaths, CallTarget, CallbackDescriptor, CallbackEvent, DebugEntry, Language, SourceLocation, SyscallName,
    When,
};
use rdb_locate::RegionSite;
use std::path::{Path, PathBuf};

/// One C region: what the front end knows, and its debug function's symbol.
#[derive(Debug, Clone)]
pub struct CRegion {
    pub site: RegionSite,
    /// The exported symbol the debug module calls the region through.
    pub entry: String,
}

/// Why the descriptors could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DescriptorError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("cannot compute the descriptors: {0}")]
    Locate(#[from] rdb_locate::LocateError),
    /// A callback that does not fit what it watches: `file:line:col: error: ...`.
    #[error("{0}")]
    Callback(String),
}

/// Writes both descriptor files for `prog` (whose DWARF is in
/// `dwarf_binary`); returns the locator's warnings.
pub fn write(
    prog: &Path,
    dwarf_binary: &Path,
    paths: &ArtefactPaths,
    regions: &[CRegion],
    callbacks: &[Spec],
    line_maps: &[rdb_descriptors::LineMap],
    toolchain: String,
) -> Result<Vec<String>, DescriptorError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| DescriptorError::Io { path, source }
    };
    let mut binary = rdb_locate::binary_identity(prog)?;
    binary.path = std::fs::canonicalize(prog).map_err(io(prog))?;
    let module = paths.debug_module.file_name().unwrap_or_default().to_string_lossy().into_owned();
    let sites: Vec<RegionSite> = regions.iter().map(|r| r.site.clone()).collect();
    let mut located = rdb_locate::locate(dwarf_binary, &sites)?;
    located.in_user_lines(&sites, line_maps);
    let mut warnings = located.warnings.clone();
    let (mut functions, mut arguments) = located.into_descriptors(Language::C, toolchain, binary, module);
    for (f, region) in functions.functions.iter_mut().zip(regions) {
        f.entry = DebugEntry::Symbol { name: region.entry.clone() };
    }
    let first_id = functions.functions.iter().map(|f| f.region).max().unwrap_or(0) + 1;
    functions.callbacks =
        callback_descriptors(callbacks, first_id, dwarf_binary, &paths.debug_module, &mut arguments, &mut warnings)?;
    functions.line_maps = line_maps.to_vec();
    rdb_descriptors::store(&paths.functions, &functions).map_err(io(&paths.functions))?;
    rdb_descriptors::store(&paths.arguments, &arguments).map_err(io(&paths.arguments))?;
    Ok(warnings)
}

/// The descriptors of the debug module's callbacks (ids from `first_id`), each checked against
/// what it watches in the program's DWARF; call callbacks' arguments go to `arguments`.
fn callback_descriptors(
    specs: &[Spec],
    first_id: u32,
    dwarf_binary: &Path,
    module: &Path,
    arguments: &mut rdb_descriptors::ArgumentDescriptors,
    warnings: &mut Vec<String>,
) -> Result<Vec<CallbackDescriptor>, DescriptorError> {
    let mut out = Vec::new();
    for (k, spec) in specs.iter().enumerate() {
        let id = first_id + k as u32;
        let at = |message: String| {
            DescriptorError::Callback(format!("{}:{}:{}: error: {message}", spec.file, spec.line, spec.column))
        };
        let target = spec.args.first().cloned().unwrap_or_default();
        // The callback's own parameter sizes, from the debug module's DWARF.
        let own = rdb_locate::locate_calls(
            module,
            &[rdb_locate::CallQuery { id, function: spec.function.clone(), returns: false }],
        )?;
        let own_sizes: Vec<(String, String, u64)> = own
            .first()
            .map(|c| c.arguments.iter().map(|a| (a.name.clone(), a.type_name.clone(), a.size)).collect())
            .unwrap_or_default();
        let event = match spec.kind {
            Kind::Syscall => {
                let when = if spec.args.last().is_some_and(|a| a == "before") { When::Before } else { When::After };
                let syscalls = spec
                    .args
                    .iter()
                    .filter(|a| *a != "before" && *a != "after")
                    .map(|a| {
                        let nr = a
                            .parse::<syscalls::Sysno>()
                            .map_err(|_| at(format!("`{a}` is not an x86-64 system call")))?;
                        Ok(SyscallName { name: a.clone(), number: nr.id() as u64 })
                    })
                    .collect::<Result<Vec<_>, DescriptorError>>()?;
                if spec.params > 1 {
                    return Err(at(format!(
                        "syscall callback `{}` takes `const rdb_syscall *` or nothing",
                        spec.function
                    )));
                }
                CallbackEvent::Syscall { syscalls, when }
            }
            Kind::Call | Kind::Return => {
                let returns = spec.kind == Kind::Return;
                let found = rdb_locate::locate_calls(
                    dwarf_binary,
                    &[rdb_locate::CallQuery { id, function: target.clone(), returns }],
                )?
                .remove(0);
                if let Some(e) = found.error {
                    return Err(at(e));
                }
                let program = matches!(&found.target, CallTarget::Program { sites, .. } if !sites.is_empty());
                if !program && found.inlined > 0 {
                    // The program's function, but every call of it was inlined: no call is
                    // seen (a library's function of that name must not stand in for it).
                    warnings.extend(found.warnings);
                    CallbackEvent::Call { function: target.clone(), target: found.target, returns }
                } else if !program {
                    // Not a function of the program: a symbol of a shared library, by name.
                    if spec.params > 6 || own_sizes.iter().any(|(_, _, size)| *size > 8) {
                        return Err(at(format!(
                            "`{}` is not a function of the program (a shared library's, found at run time): its callback takes up to six integer or pointer parameters (the argument registers)",
                            target
                        )));
                    }
                    CallbackEvent::Call {
                        function: target.clone(),
                        target: CallTarget::Symbol { symbol: target.clone() },
                        returns,
                    }
                } else {
                    warnings.extend(found.warnings);
                    if returns {
                        let value = match &found.target {
                            CallTarget::Program { return_value, .. } => return_value.clone(),
                            CallTarget::Symbol { .. } => None,
                        };
                        if let (Some(v), Some((name, ty, size))) = (&value, own_sizes.first()) {
                            if *size != v.size {
                                return Err(at(format!(
                                    "parameter `{name}` of `{}` is `{ty}` ({size} bytes); `{target}` returns `{}` ({} bytes)",
                                    spec.function, v.type_name, v.size
                                )));
                            }
                        }
                    } else {
                        check_parameters(&spec.function, &target, &own_sizes, &found.arguments).map_err(at)?;
                        if spec.params > 0 {
                            arguments.arguments.extend(found.arguments);
                        }
                    }
                    CallbackEvent::Call { function: target.clone(), target: found.target, returns }
                }
            }
            Kind::Write | Kind::Read => {
                let found =
                    rdb_locate::locate_statics(dwarf_binary, std::slice::from_ref(&target))?.remove(0).map_err(at)?;
                if !matches!(spec.params, 0 | 2 | 3) {
                    return Err(at(format!(
                        "memory callback `{}` takes nothing, (old, new) or (old, new, const rdb_access *)",
                        spec.function
                    )));
                }
                for (name, ty, size) in own_sizes.iter().take(2) {
                    if *size != found.size {
                        return Err(at(format!(
                            "parameter `{name}` of `{}` is `{ty}` ({size} bytes); `{target}` is `{}` ({} bytes)",
                            spec.function, found.type_name, found.size
                        )));
                    }
                }
                CallbackEvent::Access {
                    variable: target.clone(),
                    symbol: found.symbol,
                    address: found.address,
                    size: found.size,
                    type_name: found.type_name,
                    reads: spec.kind == Kind::Read,
                }
            }
        };
        out.push(CallbackDescriptor {
            id,
            entry: DebugEntry::Symbol { name: spec.entry.clone() },
            function: spec.function.clone(),
            source: SourceLocation { file: PathBuf::from(&spec.file), line: spec.line, column: spec.column },
            event,
            note: None,
        });
    }
    Ok(out)
}

/// A call callback's parameters against the function's: none, or as many, each of the same size.
fn check_parameters(
    callback: &str,
    function: &str,
    own: &[(String, String, u64)],
    theirs: &[rdb_descriptors::ArgumentDescriptor],
) -> Result<(), String> {
    if own.is_empty() {
        return Ok(());
    }
    if own.len() != theirs.len() {
        return Err(format!(
            "callback `{callback}` takes {} parameter(s); `{function}` takes {} ({}): take them all, in order, or none",
            own.len(),
            theirs.len(),
            theirs.iter().map(|a| format!("{} {}", a.type_name, a.name)).collect::<Vec<_>>().join(", ")
        ));
    }
    for (i, ((name, ty, size), a)) in own.iter().zip(theirs).enumerate() {
        if *size != a.size {
            return Err(format!(
                "parameter {} `{name}` of `{callback}` is `{ty}` ({size} bytes); `{function}` takes `{} {}` ({} bytes)",
                i + 1,
                a.type_name,
                a.name,
                a.size
            ));
        }
    }
    Ok(())
}
