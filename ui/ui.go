// Package ui holds the browser code of govkit's web UIs (TypeScript under
// src/, built by internal/uibuild) and gives the pages the Go servers write
// themselves — the two API explorers and the caught-mail page — the same
// look: [Stylesheet] is the UIs' shared style sheet followed by the few
// rules of those pages, for them to serve from their own origin (their
// Content-Security-Policies allow style sheets from 'self' only).
package ui

import _ "embed"

//go:embed src/shared/styles.css
var shared []byte

//go:embed src/shared/pages.css
var pages []byte

// Stylesheet is src/shared/styles.css and src/shared/pages.css, as one
// file.
var Stylesheet = append(append(append([]byte{}, shared...), '\n'), pages...)
