//! The replay format of SPEC section 5.
