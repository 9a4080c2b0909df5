package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
)

// Contents is what Inspect found in a database file, read without writing.
type Contents struct {
	// Exists is false when there is no file at all.
	Exists bool
	// Schema is true when the file holds Soul Stack's schema (its
	// schema_migrations table); false for an empty file or a SQLite
	// file of something else.
	Schema bool
	// Archons counts the Archons; an initialized keeper has at least one.
	Archons int
}

// Empty reports whether the file holds no keeper data: missing, empty,
// without the schema or without a single Archon.
func (c Contents) Empty() bool { return !c.Exists || !c.Schema || c.Archons == 0 }

// Inspect reads what the database file at path holds without creating,
// migrating or writing it (Open would turn an empty file into a fresh
// store). A file that is not a SQLite database is an error.
func Inspect(ctx context.Context, path string) (Contents, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return Contents{}, nil
	case err != nil:
		return Contents{}, unavailable(path, err)
	case fi.Size() == 0:
		return Contents{Exists: true}, nil
	}
	db, err := openReadOnly(path)
	if err != nil {
		return Contents{}, err
	}
	defer db.Close()
	c := Contents{Exists: true}
	if err := db.QueryRowContext(ctx, `SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`).Scan(&c.Schema); err != nil {
		return Contents{}, fmt.Errorf("reading sqlite store %s: %w", path, err)
	}
	if !c.Schema {
		return c, nil
	}
	var archons bool
	if err := db.QueryRowContext(ctx, `SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'archons'`).Scan(&archons); err != nil {
		return Contents{}, fmt.Errorf("reading sqlite store %s: %w", path, err)
	}
	if archons {
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM archons`).Scan(&c.Archons); err != nil {
			return Contents{}, fmt.Errorf("reading sqlite store %s: %w", path, err)
		}
	}
	return c, nil
}

// maxCheckProblems bounds how many of quick_check's lines an error quotes.
const maxCheckProblems = 5

// QuickCheck runs SQLite's `PRAGMA quick_check` on the database file at
// path through a connection of its own, so it reads the file and not a
// cache that outlived a change under it. It returns nil when the check
// said "ok", an *IntegrityError naming the first problems when it did
// not, and ctx's error when ctx ended first (the caller
// bounds the check's time with ctx).
func QuickCheck(ctx context.Context, path string) error {
	db, err := openReadOnly(path)
	if err != nil {
		return err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `PRAGMA quick_check`)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &IntegrityError{Path: path, Problems: []string{err.Error()}}
	}
	defer rows.Close()
	var problems []string
	more := 0
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return fmt.Errorf("reading quick_check of %s: %w", path, err)
		}
		if line == "ok" {
			continue
		}
		if len(problems) < maxCheckProblems {
			problems = append(problems, line)
		} else {
			more++
		}
	}
	if err := rows.Err(); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		problems = append(problems, err.Error())
	}
	if len(problems) == 0 {
		return nil
	}
	if more > 0 {
		problems = append(problems, fmt.Sprintf("(%d more)", more))
	}
	return &IntegrityError{Path: path, Problems: problems}
}

// IntegrityError is a failed integrity check of a database file.
type IntegrityError struct {
	Path     string
	Problems []string
}

func (e *IntegrityError) Error() string {
	return fmt.Sprintf("the SQLite database %s failed its integrity check (PRAGMA quick_check): %s",
		e.Path, strings.Join(e.Problems, "; "))
}

// openReadOnly opens path with read-only connections that never create
// the file.
func openReadOnly(path string) (*sql.DB, error) {
	v := url.Values{}
	v.Set("mode", "ro")
	v.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	v.Add("_pragma", "query_only(1)")
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+v.Encode())
	if err != nil {
		return nil, fmt.Errorf("opening sqlite store %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// Backup writes an online, consistent copy of the database file at src
// into dst with `VACUUM INTO`: one read transaction, so a keeper serving
// src goes on writing meanwhile and the copy holds every transaction
// committed before it began. dst must not exist; it is created with mode
// 0600, and removed again when the copy fails.
func Backup(ctx context.Context, src, dst string) error {
	if c, err := Inspect(ctx, src); err != nil {
		return err
	} else if !c.Exists {
		return fmt.Errorf("no SQLite database at %s", src)
	}
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("creating the backup: %w", err)
	}
	f.Close()
	v := url.Values{}
	v.Set("mode", "ro")
	v.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: src}).EscapedPath()+"?"+v.Encode())
	if err == nil {
		defer db.Close()
		_, err = db.ExecContext(ctx, `VACUUM INTO ?`, dst)
	}
	if err != nil {
		os.Remove(dst)
		return fmt.Errorf("backing up %s into %s: %w", src, dst, err)
	}
	return nil
}
