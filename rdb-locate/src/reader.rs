//! The reader type of every DWARF section the locator reads.

/// The reader type used for all DWARF sections (sections are decompressed
/// into owned buffers when needed).
pub type R = gimli::EndianRcSlice<gimli::RunTimeEndian>;
