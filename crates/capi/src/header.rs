//! A test: `include/hetblas.h` is rendered from the CBLAS tables (`cblas!` in `cblas.rs`,
//! `cblas1!` in `cblas1.rs`), which record each exported name's C prototype. The test fails
//! when the file differs from the rendering; `HETBLAS_BLESS=1 cargo test -p hetblas-capi --lib
//! header` writes it. A test rather than a build script: the header changes only with a table
//! line, and a stale one is caught by every `cargo test`. The records exist in test builds
//! only; the library carries none of them.

use std::fmt::Write;

/// One exported CBLAS name as its table line records it.
#[derive(Debug)]
pub(crate) struct Decl {
    /// `cblas_dgemm`.
    pub name: &'static str,
    /// The element type's column ([`crate::elem::Elem::IDX`]: S, D, C, Z).
    pub ty: usize,
    /// The returned value's kind: "" none, "r" the real type, "v" the type, "z" an index,
    /// "d" a double.
    pub ret: &'static str,
    /// Each argument's kind (`e i v r p m q`) and name.
    pub args: &'static [(&'static str, &'static str)],
    /// The row-major renumbering (`swap(..)` on the line; [`crate::xerbla::unswap`]).
    pub swaps: &'static [(i32, i32)],
    /// The line's `///` comment, put above its prototypes.
    pub doc: &'static [&'static str],
}

/// The header up to the prototypes.
const HEAD: &str = r#"/* hetblas.h: the CBLAS interface of libhetblas.so (the drop-in BLAS of hetblas).
 *
 * Link with `pkg-config --libs hetblas` (-lhetblas). Every routine of the reference CBLAS, in
 * S, D, C and Z, row- and column-major. Complex scalars and arrays are passed as pointers
 * (`void *`), as in the reference cblas.h. The Fortran interface (dgemm_, ...) is exported too.
 *
 * Integers: by default `int` (LP64, the unsuffixed symbols). Define HETBLAS_ILP64 before
 * including this header to use 64-bit integers: the names then resolve to the ILP64 symbols
 * (`cblas_dgemm64_`, OpenBLAS's suffix convention), which the same library exports.
 * Generated from the CBLAS tables of crates/capi/src/cblas.rs and cblas1.rs; do not edit.
 * Regenerate: HETBLAS_BLESS=1 cargo test -p hetblas-capi --lib header */
#ifndef HETBLAS_H
#define HETBLAS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef HETBLAS_ILP64
typedef int64_t HETBLAS_INT;
#define HETBLAS_NAME(name) name##64_
#else
typedef int HETBLAS_INT;
#define HETBLAS_NAME(name) name
#endif

#ifndef CBLAS_ENUM_DEFINED_H
#define CBLAS_ENUM_DEFINED_H
typedef enum CBLAS_LAYOUT { CblasRowMajor = 101, CblasColMajor = 102 } CBLAS_LAYOUT;
typedef enum CBLAS_TRANSPOSE { CblasNoTrans = 111, CblasTrans = 112, CblasConjTrans = 113 } CBLAS_TRANSPOSE;
typedef enum CBLAS_UPLO { CblasUpper = 121, CblasLower = 122 } CBLAS_UPLO;
typedef enum CBLAS_DIAG { CblasNonUnit = 131, CblasUnit = 132 } CBLAS_DIAG;
typedef enum CBLAS_SIDE { CblasLeft = 141, CblasRight = 142 } CBLAS_SIDE;
typedef CBLAS_LAYOUT CBLAS_ORDER;
#endif

/* Called with the parameter number of a bad argument; define your own to handle it. */
void cblas_xerbla(int info, const char *rout, const char *form, ...);
"#;

/// The header after the ILP64 names.
const TAIL: &str = "#endif\n\n#ifdef __cplusplus\n}\n#endif\n\n#endif /* HETBLAS_H */\n";

/// Each element type's C type (a complex one is passed as `void *`) and its real type.
const C_TYPES: [(&str, &str); 4] = [
    ("float", "float"),
    ("double", "double"),
    ("void", "float"),
    ("void", "double"),
];

/// The command that writes the header.
const BLESS: &str = "HETBLAS_BLESS=1 cargo test -p hetblas-capi --lib header";

/// An argument's C declaration. An enumeration's type follows from the argument's name.
fn arg(d: &Decl, kind: &str, name: &str) -> String {
    let (elem, real) = C_TYPES[d.ty];
    match kind {
        "e" => {
            let ty = match name {
                "order" => "CBLAS_LAYOUT",
                "uplo" => "CBLAS_UPLO",
                "side" => "CBLAS_SIDE",
                "diag" => "CBLAS_DIAG",
                t if t.starts_with("trans") => "CBLAS_TRANSPOSE",
                _ => panic!("{}: no CBLAS enumeration is named {name}", d.name),
            };
            format!("{ty} {name}")
        }
        "i" => format!("HETBLAS_INT {name}"),
        "v" if elem == "void" => format!("const void *{name}"),
        "v" => format!("{elem} {name}"),
        "r" => format!("{real} {name}"),
        "p" => format!("const {elem} *{name}"),
        "m" => format!("{elem} *{name}"),
        "q" => format!("{real} *{name}"),
        _ => panic!("{}: unknown argument kind {kind}", d.name),
    }
}

/// A prototype, on one line.
fn prototype(d: &Decl) -> String {
    let (elem, real) = C_TYPES[d.ty];
    let ret = match d.ret {
        "" => "void",
        "r" => real,
        "v" if elem != "void" => elem,
        "z" => "size_t",
        "d" => "double",
        r => panic!("{}: no C return type for kind {r}", d.name),
    };
    let args: Vec<String> = d.args.iter().map(|&(k, a)| arg(d, k, a)).collect();
    format!("{ret} HETBLAS_NAME({})({});\n", d.name, args.join(", "))
}

/// The whole header: Level 1, then Level 2 and 3, each in table order, then the ILP64 names.
pub(crate) fn render() -> String {
    let mut out = HEAD.to_string();
    let mut names = Vec::new();
    let tables = [
        ("Level 1", crate::cblas1::DECLS),
        ("Level 2 and 3", crate::cblas::DECLS),
    ];
    for (title, table) in tables {
        let _ = write!(out, "\n/* {title} */\n");
        for line in table {
            let doc = line.first().map_or(&[][..], |d| d.doc);
            for (i, text) in doc.iter().enumerate() {
                out += if i == 0 { "/*" } else { " *" };
                out += text;
                out += if i + 1 == doc.len() { " */\n" } else { "\n" };
            }
            for d in line.iter() {
                out += &prototype(d);
                names.push(d.name);
            }
        }
    }
    out += "\n#ifdef HETBLAS_ILP64\n/* The reference names, mapped to the ILP64 symbols. */\n";
    for name in names {
        let _ = writeln!(out, "#define {name} {name}64_");
    }
    out + TAIL
}

#[test]
fn header_is_the_rendering_of_the_cblas_tables() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("include/hetblas.h");
    let want = render();
    // Reading the environment is fine here: a test of the drop-in, not of core.
    if std::env::var_os("HETBLAS_BLESS").is_some() {
        std::fs::write(&path, &want).expect("include/hetblas.h is writable");
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    let first = have.lines().zip(want.lines()).position(|(h, w)| h != w);
    if let Some(n) = first {
        let (h, w) = (have.lines().nth(n), want.lines().nth(n));
        panic!(
            "include/hetblas.h is not the CBLAS tables' header; line {}:\n  file:      {}\n  \
             rendering: {}\nregenerate it: {BLESS}",
            n + 1,
            h.unwrap_or_default(),
            w.unwrap_or_default()
        );
    }
    assert!(
        have == want,
        "include/hetblas.h has {} lines, the CBLAS tables' header {}; regenerate it: {BLESS}",
        have.lines().count(),
        want.lines().count()
    );
}
