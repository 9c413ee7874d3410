package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rwshard/rwshard"
)

// passwordEnv names the environment variable that holds the password of a
// CONFIG without one.
const passwordEnv = "RWSHARD_PASSWORD"

// fillCredentials gives a CONFIG without a password one: from
// RWSHARD_PASSWORD if it is set, else from the [client] section of the
// MySQL option file defaultsFile, or of ~/.my.cnf when defaultsFile is ""
// and there is one. The option file's user fills a CONFIG without a user.
// A named defaultsFile must exist (and is read even when CONFIG has both).
// A sharding rules file's data sources are left alone.
func fillCredentials(cfg *rwshard.Config, defaultsFile string) error {
	if cfg.Sharding.RulesFile != "" || cfg.Backend == nil {
		return nil
	}
	b := cfg.Backend
	needPassword := b.Passwd == ""
	if pw, ok := os.LookupEnv(passwordEnv); ok && needPassword {
		b.Passwd, needPassword = pw, false
	}
	if !needPassword && b.User != "" && defaultsFile == "" {
		return nil
	}
	path := defaultsFile
	if path == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil // no home, no ~/.my.cnf
		}
		path = filepath.Join(home, ".my.cnf")
	}
	opts, err := readOptionFile(path, "client")
	if errors.Is(err, fs.ErrNotExist) && defaultsFile == "" {
		return nil
	}
	if err != nil {
		return err
	}
	if needPassword {
		b.Passwd = opts["password"]
	}
	if b.User == "" {
		b.User = opts["user"]
	}
	return nil
}

// readOptionFile returns the options of one section of a MySQL option file
// (my.cnf), keys lowercased. Errors name the file.
func readOptionFile(path, section string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("option file %s: %w", path, err)
	}
	opts, err := parseOptions(data, section)
	if err != nil {
		return nil, fmt.Errorf("option file %s: %w", path, err)
	}
	return opts, nil
}

// parseOptions reads the options of section from the text of a MySQL
// option file, as the mysql client does as far as rwshard needs: [section]
// headers (a section may appear more than once, a later value wins),
// key=value lines with spaces allowed around the =, # and ; comment lines,
// a # outside quotes ending the line, a value in single or double quotes,
// the escapes \n \t \r \b \s \\ \' \". A key without a value (a password
// to prompt for) and !include directives are ignored.
func parseOptions(data []byte, section string) (map[string]string, error) {
	opts := map[string]string{}
	in := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := strings.TrimSpace(sc.Text())
		if lineNo == 1 {
			line = strings.TrimPrefix(line, "\uFEFF") // a byte order mark
		}
		switch {
		case line == "" || line[0] == '#' || line[0] == ';' || line[0] == '!':
			continue
		case line[0] == '[':
			end := strings.IndexByte(line, ']')
			if end < 0 {
				return nil, fmt.Errorf("line %d: no ] after the section name", lineNo)
			}
			in = strings.EqualFold(strings.TrimSpace(line[1:end]), section)
			continue
		case !in:
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		opts[strings.ToLower(strings.TrimSpace(key))] = optionValue(value)
	}
	return opts, sc.Err()
}

// optionValue is the value of an option as written after the =: the end
// comment removed, surrounding quotes stripped, escapes applied.
func optionValue(v string) string {
	// A # outside quotes starts a comment.
	var quote byte
	escaped := false
scan:
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case escaped:
			escaped = false
		case c == '\\':
			escaped = true
		case quote == 0 && (c == '\'' || c == '"'):
			quote = c
		case c == quote:
			quote = 0
		case quote == 0 && c == '#':
			v = v[:i]
			break scan
		}
	}
	v = strings.TrimSpace(v)
	if len(v) >= 2 && (v[0] == '\'' || v[0] == '"') && v[len(v)-1] == v[0] {
		v = v[1 : len(v)-1]
	}
	if !strings.Contains(v, `\`) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] != '\\' || i == len(v)-1 {
			b.WriteByte(v[i])
			continue
		}
		i++
		switch c := v[i]; c {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 's':
			b.WriteByte(' ')
		case '\\', '\'', '"':
			b.WriteByte(c)
		default: // an unknown escape stays as written
			b.WriteByte('\\')
			b.WriteByte(c)
		}
	}
	return b.String()
}
