//! Rewriting: the main text (regions and rdb items removed byte-exactly)
//! and the debug text (each region a call of `rdb_region::region`) of a file
//! from what the walk found.

use crate::parse::{Arg, FileModel};
use crate::text::{self, Edit, LineIndex};
use crate::{ExtractedFile, LineCol, Nested, Region, SourceInput};

/// The text replacing a region's `rdb_begin!();` and `rdb_end!();` in the
/// debug module: a call of `region::<ID, _, _>` whose argument types are
/// those of a tuple holding a shared reference to each program variable and
/// whose closure receives them by the parameter names the region's uses
/// were rewritten to.
pub(crate) fn region_call(id: u32, args: &[Arg]) -> (String, String) {
    let refs: Vec<&str> = args.iter().map(|a| a.reference.as_str()).collect();
    let params: Vec<&str> = args.iter().map(|a| a.param.as_str()).collect();
    (
        format!("::rdb_region::region::<{id}, _, _>({}, move |{}| {{", typed_only(&tuple(&refs)), tuple(&params)),
        "});".into(),
    )
}

fn tuple(v: &[&str]) -> String {
    if v.is_empty() {
        "()".to_string()
    } else {
        format!("({},)", v.join(", "))
    }
}

/// `::rdb_region::types_of!(expr)`: always `None`, typed `Option<T>` where
/// `T` is `expr`'s type, which is never evaluated (see the macro).
fn typed_only(expr: &str) -> String {
    format!("::rdb_region::types_of!({expr})")
}

/// The texts replacing the markers of a region that shares debug-only
/// locals: it returns its `exports` (its top-level `let`s later regions
/// use) and receives the exports of the earlier regions it uses
/// (`imports`: region and its exports) as its closure's second parameter.
/// Its result is bound to `__rdb_shared_ID`, which later regions pass by
/// reference: the types flow from one region's closure to the next by
/// inference.
fn as_strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

pub(crate) fn sharing_call(
    id: u32,
    args: &[Arg],
    exports: &[String],
    imports: &[(u32, Vec<String>)],
) -> (String, String) {
    let refs: Vec<&str> = args.iter().map(|a| a.reference.as_str()).collect();
    let params: Vec<&str> = args.iter().map(|a| a.param.as_str()).collect();
    let exported: Vec<&str> = exports.iter().map(String::as_str).collect();
    let sources: Vec<String> = imports.iter().map(|(from, _)| format!("&__rdb_shared_{from}")).collect();
    let patterns: Vec<String> =
        imports.iter().map(|(_, names)| tuple(&names.iter().map(String::as_str).collect::<Vec<_>>())).collect();
    let open = format!(
        "let __rdb_shared_{id} = ::rdb_region::region_shared::<{id}, _, _, _, _>({}, {}, move |{}, {}| {{",
        typed_only(&tuple(&refs)),
        tuple(&as_strs(&sources)),
        tuple(&params),
        tuple(&as_strs(&patterns))
    );
    (open, format!("; {} }});", tuple(&exported)))
}

/// Both texts of `input` and its regions, with anchors and the positions of
/// the closures around them in the main text's coordinates.
pub(crate) fn rewrite(input: &SourceInput, model: FileModel) -> (ExtractedFile, Vec<Region>) {
    let widened = model.removals.iter().map(|r| text::removal_range(&input.text, r.clone())).collect();
    let merged = text::merge_removals(&input.text, widened);
    let strip_edits: Vec<Edit> = merged.into_iter().map(|range| Edit { range, with: String::new() }).collect();
    let stripped = text::apply(&input.text, strip_edits.clone());
    let debug = text::apply(&input.text, model.debug_edits);
    let stripped_idx = LineIndex::new(&stripped);
    let at = |offset: usize| {
        let (line, column) = stripped_idx.line_col(text::map_offset(&strip_edits, offset));
        LineCol { line, column }
    };
    let mut regions = Vec::new();
    for found in model.regions {
        let (mut region, anchor, bodies, written) = (found.region, found.anchor, found.bodies, found.written);
        region.anchor = at(anchor);
        region.last_statement = found.last_statement.map(|(start, end)| (at(start).line, at(end).line));
        region.block_close = at(found.close).line;
        region.before_loop = found.before_loop.map(|(start, end)| (at(start).line, at(end).line));
        for (argument, offsets) in region.arguments.iter_mut().zip(written) {
            argument.written_after = offsets.into_iter().map(at).collect();
        }
        region.nesting =
            region.nesting.into_iter().zip(bodies).map(|(n, start)| Nested { at: at(start), ..n }).collect();
        regions.push(region);
    }
    let instrumented = stripped != input.text;
    let line_map = if instrumented { line_map(&input.text, &strip_edits, &stripped) } else { Vec::new() };
    let file = ExtractedFile { path: input.path.clone(), instrumented, stripped, debug, line_map };
    (file, regions)
}

/// For each line of the stripped text (index 0: line 1), the line of the user's text it comes
/// from.
fn line_map(original: &str, strip_edits: &[Edit], stripped: &str) -> Vec<u32> {
    let stripped_idx = LineIndex::new(stripped);
    let mut map = vec![0u32; stripped.lines().count().max(1)];
    let mut offset = 0;
    for (i, line) in original.split_inclusive('\n').enumerate() {
        let removed = strip_edits.iter().any(|e| e.range.start <= offset && offset + line.len() <= e.range.end);
        if !removed {
            let (to, _) = stripped_idx.line_col(text::map_offset(strip_edits, offset));
            if let Some(slot) = map.get_mut(to as usize - 1) {
                if *slot == 0 {
                    *slot = i as u32 + 1;
                }
            }
        }
        offset += line.len();
    }
    map
}

#[cfg(test)]
mod tests {
    use crate::{extract, SourceInput};

    #[test]
    fn stripped_lines_map_back_to_the_users_lines() {
        let text = "use rdb_macros::debug_only;\nfn a() {}\n\n#[debug_only]\nfn b() {}\n\nfn c() {\n    a();\n}\n";
        let input = SourceInput {
            path: "src/main.rs".into(),
            text: text.into(),
            module_path: vec![],
            crate_name: "app".into(),
        };
        let x = extract(&[input], 1).unwrap();
        let f = &x.files[0];
        assert_eq!(f.stripped, "fn a() {}\n\nfn c() {\n    a();\n}\n");
        assert_eq!(f.line_map, [2, 3, 7, 8, 9]);
    }
}
