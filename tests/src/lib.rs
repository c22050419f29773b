//! End-to-end tests of rdb live in `tests/tests/`; helpers shared by them live here.
