//! rdb-clang: outlines C debug regions from LLVM IR into a debug module (inkwell, LLVM 14).
