//! Rewriting: the main text (regions and rdb items removed byte-exactly)
//! and the debug text (each region a call of `rdb_region::region`) of a file
//! from what the walk found.

use crate::parse::{Arg, FileModel};
use crate::text::{self, Edit, LineIndex};
use crate::{ExtractedFile, LineCol, Nested, Region, SourceInput};

/// The text replacing a region's `rdb_begin!();` and `rdb_end!();` in the
/// debug module: a call of `region::<ID, _, _>` whose argument tuple holds a
/// shared reference to each program variable and whose closure receives
/// them by the parameter names the region's uses were rewritten to.
pub(crate) fn region_call(id: u32, args: &[Arg]) -> (String, String) {
    let refs: Vec<&str> = args.iter().map(|a| a.reference.as_str()).collect();
    let params: Vec<&str> = args.iter().map(|a| a.param.as_str()).collect();
    let tuple = |v: &[&str]| if v.is_empty() { "()".to_string() } else { format!("({},)", v.join(", ")) };
    (format!("::rdb_region::region::<{id}, _, _>({}, move |{}| {{", tuple(&refs), tuple(&params)), "});".into())
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
    for (mut region, anchor, bodies) in model.regions {
        region.anchor = at(anchor);
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
