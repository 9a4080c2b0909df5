// Package docsite holds the tests of the documentation: the README (the
// front door) and the mkdocs site built from docs/ (make docs). It has no
// code of its own.
package docsite
