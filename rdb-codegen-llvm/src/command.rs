//! The clang command line as rdb-clang sees it: which arguments are inputs
//! (C sources, debug sources, objects), the output, the mode, and which
//! flags the extra compiles (instrumented IR, DWARF twin) must drop.

use std::path::PathBuf;

/// What a clang invocation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `-c`: sources to objects.
    Compile,
    /// No `-c`/`-S`/`-E`: compile any sources and link an executable.
    Link,
    /// `-S`, `-E`, `-fsyntax-only`, `-M`/`-MM` alone, `--version`...: run
    /// clang on the stripped sources and produce nothing rdb-specific.
    Other,
}

/// One input file on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    /// Index of the argument.
    pub index: usize,
    pub path: PathBuf,
}

/// A parsed clang command line. `args` stays verbatim: the main build runs
/// exactly these arguments.
#[derive(Debug, Clone)]
pub struct Command {
    pub args: Vec<String>,
    pub mode: Mode,
    /// `*.c` sources that are program code.
    pub sources: Vec<Input>,
    /// `*.rdb.c` sources: debug-only code (compiled only into the debug module).
    pub debug_sources: Vec<Input>,
    /// `*.rdb.o` objects: compiled debug-only code.
    pub debug_objects: Vec<Input>,
    /// Other positional inputs (objects, archives, libraries), in order.
    pub objects: Vec<Input>,
    /// Index of the `-o` flag (its value is at index+1) or of a joined `-oFILE`.
    pub output: Option<(usize, PathBuf)>,
    /// Whether the flags already produce full DWARF (`-g`, `-g2`, `-ggdb`...).
    pub full_debug_info: bool,
}

/// Flags whose value is the next argument.
const WITH_VALUE: &[&str] = &[
    "-o",
    "-I",
    "-D",
    "-U",
    "-include",
    "-imacros",
    "-isystem",
    "-iquote",
    "-idirafter",
    "-iprefix",
    "-iwithprefix",
    "-isysroot",
    "-x",
    "-MF",
    "-MT",
    "-MQ",
    "-L",
    "-l",
    "-Xlinker",
    "-Xclang",
    "-Xassembler",
    "-Xpreprocessor",
    "-target",
    "-arch",
    "-T",
    "-u",
    "-e",
    "-z",
    "-ivfsoverlay",
    "-mllvm",
    "--sysroot",
    "-aux-info",
    "--param",
    "-include-pch",
    "-Xanalyzer",
    "-working-directory",
];

impl Command {
    /// Parses a command line (without the program name).
    pub fn parse(args: Vec<String>) -> Result<Command, String> {
        let mut cmd = Command {
            args,
            mode: Mode::Link,
            sources: Vec::new(),
            debug_sources: Vec::new(),
            debug_objects: Vec::new(),
            objects: Vec::new(),
            output: None,
            full_debug_info: false,
        };
        let (mut compile, mut other) = (false, false);
        let mut inputs_seen = false;
        let mut i = 0;
        while i < cmd.args.len() {
            let a = cmd.args[i].clone();
            if a == "-x" {
                return Err("`-x` is not supported by rdb-clang yet: name C sources `*.c`".into());
            }
            if a == "-o" {
                let v = cmd.args.get(i + 1).ok_or("`-o` needs a file name")?;
                cmd.output = Some((i, PathBuf::from(v)));
                i += 2;
                continue;
            }
            if WITH_VALUE.contains(&a.as_str()) {
                i += 2;
                continue;
            }
            if let Some(v) = a.strip_prefix("-o") {
                if !a.starts_with("-objc") {
                    cmd.output = Some((i, PathBuf::from(v)));
                }
                i += 1;
                continue;
            }
            match a.as_str() {
                "-c" => compile = true,
                "-S" | "-E" | "-fsyntax-only" | "-M" | "-MM" | "--version" | "-###" | "-print-search-dirs" => {
                    other = true
                }
                _ => {}
            }
            if a.starts_with("-print-") || a.starts_with("--print") || a == "-dumpversion" || a == "-dumpmachine" {
                other = true;
            }
            if let Some(g) = a.strip_prefix("-g") {
                cmd.full_debug_info = match g {
                    "" | "2" | "3" | "gdb" | "gdb2" | "gdb3" | "dwarf" | "dwarf-4" | "dwarf-5" | "dwarf-2"
                    | "dwarf-3" => true,
                    "0" | "line-tables-only" | "mlt" | "line-directives-only" | "1" | "gdb0" | "gdb1" => false,
                    _ => cmd.full_debug_info,
                };
            }
            if !a.starts_with('-') || a == "-" {
                if a == "-" {
                    return Err("reading a source from stdin (`-`) is not supported by rdb-clang".into());
                }
                inputs_seen = true;
                let input = Input { index: i, path: PathBuf::from(&a) };
                if a.ends_with(".rdb.c") {
                    cmd.debug_sources.push(input);
                } else if a.ends_with(".rdb.o") {
                    cmd.debug_objects.push(input);
                } else if a.ends_with(".c") {
                    cmd.sources.push(input);
                } else {
                    cmd.objects.push(input);
                }
            }
            i += 1;
        }
        cmd.mode = if other || !inputs_seen {
            Mode::Other
        } else if compile {
            Mode::Compile
        } else {
            Mode::Link
        };
        Ok(cmd)
    }

    /// Arguments with the given inputs removed (by argument index).
    pub fn without(&self, remove: &[usize]) -> Vec<String> {
        self.args.iter().enumerate().filter(|(i, _)| !remove.contains(i)).map(|(_, a)| a.clone()).collect()
    }

    /// Indices of every debug input (`*.rdb.c`, `*.rdb.o`).
    pub fn debug_inputs(&self) -> Vec<usize> {
        self.debug_sources.iter().chain(&self.debug_objects).map(|i| i.index).collect()
    }

    /// The flags for an extra compile of one source: every argument except
    /// inputs, the output, the mode, optimisation, debug-info and dependency
    /// flags, LTO and `-Werror` (the caller adds its own).
    pub fn compile_flags(&self) -> Vec<String> {
        let inputs: Vec<usize> = self
            .sources
            .iter()
            .chain(&self.debug_sources)
            .chain(&self.debug_objects)
            .chain(&self.objects)
            .map(|i| i.index)
            .collect();
        let mut out = Vec::new();
        let mut i = 0;
        while i < self.args.len() {
            let a = &self.args[i];
            if inputs.contains(&i) {
                i += 1;
                continue;
            }
            if matches!(a.as_str(), "-o" | "-MF" | "-MT" | "-MQ" | "-Xlinker" | "-L" | "-l" | "-T" | "-u" | "-z") {
                i += 2;
                continue;
            }
            let drop = matches!(
                a.as_str(),
                "-c" | "-MD"
                    | "-MMD"
                    | "-MP"
                    | "-M"
                    | "-MM"
                    | "-Werror"
                    | "-static"
                    | "-shared"
                    | "-pie"
                    | "-no-pie"
                    | "-rdynamic"
            ) || (a.starts_with("-o") && !a.starts_with("-objc"))
                || a.starts_with("-O")
                || a.starts_with("-g")
                || a.starts_with("-flto")
                || a.starts_with("-Wl,")
                || a.starts_with("-l")
                || a.starts_with("-L")
                || a.starts_with("-fsanitize")
                || a.starts_with("-fprofile")
                || a.starts_with("-MF")
                || a.starts_with("-MT");
            if !drop {
                out.push(a.clone());
                if WITH_VALUE.contains(&a.as_str()) {
                    if let Some(v) = self.args.get(i + 1) {
                        out.push(v.clone());
                    }
                    i += 1;
                }
            }
            i += 1;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Command {
        Command::parse(s.split_whitespace().map(String::from).collect()).unwrap()
    }

    #[test]
    fn modes_inputs_and_output() {
        let c = parse("-O2 -g -c x.c -o x.o");
        assert_eq!(c.mode, Mode::Compile);
        assert_eq!(c.sources, [Input { index: 3, path: "x.c".into() }]);
        assert_eq!(c.output, Some((4, "x.o".into())));
        assert!(c.full_debug_info);
        let c = parse("-O2 x.c helpers.rdb.c -I inc -o prog -lm");
        assert_eq!(c.mode, Mode::Link);
        assert_eq!(c.debug_sources.len(), 1);
        assert_eq!(c.sources.len(), 1);
        assert!(!c.full_debug_info);
        assert_eq!(c.compile_flags(), ["-I", "inc"]);
        let c = parse("a.o b.o h.rdb.o -o prog");
        assert_eq!((c.mode, c.objects.len(), c.debug_objects.len()), (Mode::Link, 2, 1));
        assert_eq!(parse("-S x.c").mode, Mode::Other);
        assert_eq!(parse("--version").mode, Mode::Other);
        assert!(!parse("-g -g0 -c x.c").full_debug_info);
        assert!(Command::parse(vec!["-x".into(), "c".into(), "-".into()]).is_err());
    }

    #[test]
    fn compile_flags_drop_outputs_and_optimisation() {
        let c = parse("-O2 -g -DX=1 -std=c99 -MD -MF x.d -c x.c -o x.o -Werror -Wall");
        assert_eq!(c.compile_flags(), ["-DX=1", "-std=c99", "-Wall"]);
    }
}
