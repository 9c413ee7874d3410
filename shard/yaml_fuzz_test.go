package shard

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rwshard/rwshard"
)

// FuzzParseYAML: no input makes ParseYAML or Build panic, and every
// error is a *rwshard.ConfigError in rwshard's format.
func FuzzParseYAML(f *testing.F) {
	files, _ := filepath.Glob("testdata/rules/*.yaml")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(nativeBase + "tables: {t: {dataNodes: 'ds_${0..1}.t', databaseStrategy: {column: c, algorithm: db_mod}}}"))
	f.Add([]byte(ssBase + "- !READWRITE_SPLITTING\n  dataSourceGroups:\n    rw: {writeDataSourceName: ds_0, readDataSourceNames: ds_1}\n"))
	f.Add([]byte(jdbcYAML("jdbc:mysql://[::1]:3306/db?serverTimezone=GMT%2B8&sslMode=REQUIRED", "")))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("dataSources: {<<: [{a: 1}, *x]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(err error) {
			var ce *rwshard.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("%T is not a *rwshard.ConfigError: %v", err, err)
			}
			if !strings.HasPrefix(err.Error(), "rwshard: config") {
				t.Fatalf("error without prefix: %v", err)
			}
		}
		c, err := ParseYAML(data)
		if err != nil {
			check(err)
			return
		}
		if _, err := c.Build(nil); err != nil {
			check(err)
		}
	})
}
