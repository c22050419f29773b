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
    for found in model.regions {
        let (mut region, anchor, bodies, written) = (found.region, found.anchor, found.bodies, found.written);
        region.anchor = at(anchor);
        for (argument, offsets) in region.arguments.iter_mut().zip(written) {
            argument.written_after = offsets.into_iter().map(at).collect();
        }
        region.nesting =
            region.nesting.into_iter().zip(bodies).map(|(n, start)| Nested { at: at(start), ..n }).collect();
        regions.push(region);
    }
    let file = ExtractedFile { path: input.path.clone(), instrumented: stripped != input.text, stripped, debug };
    (file, regions)
}
