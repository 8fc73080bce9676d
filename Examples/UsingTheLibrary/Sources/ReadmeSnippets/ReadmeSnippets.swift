// The README's Swift blocks other than "Using the library" (which is UsingTheLibrary's
// main.swift) are written beside this file by scripts/readme-snippets, one file a block, and
// compiled by scripts/run-example. This file keeps the target non-empty before they exist.
