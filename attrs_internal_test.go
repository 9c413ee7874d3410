package rwshard

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func TestConnAttrs(t *testing.T) {
	cfg, err := ParseDSN("app:pw@tcp(10.0.0.1:3306)/app?rwshard.program=orders-api")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := connAttrs(cfg, "v1.2.3"), "rwshard_version:v1.2.3,rwshard_program:orders-api,rwshard_rules:none"; got != want {
		t.Errorf("connAttrs = %q, want %q", got, want)
	}
	if strings.Contains(cfg.FormatDSN(), "rwshard.program=orders-api") == false {
		t.Errorf("FormatDSN lost rwshard.program: %s", cfg.FormatDSN())
	}

	// The caller's attributes come first and are kept; one of rwshard's
	// names set there wins.
	cfg, err = ParseDSN("app:pw@tcp(10.0.0.1:3306)/app?connectionAttributes=team:payments,rwshard_version:v0.9.0")
	if err != nil {
		t.Fatal(err)
	}
	got := connAttrs(cfg, "v1.2.3")
	if want := "team:payments,rwshard_version:v0.9.0,rwshard_program:"; !strings.HasPrefix(got, want) || strings.Contains(got, "v1.2.3") {
		t.Errorf("connAttrs = %q, want it to start %q and keep the caller's version", got, want)
	}
	if !strings.HasSuffix(got, ",rwshard_rules:none") {
		t.Errorf("connAttrs = %q: no rwshard_rules", got)
	}
}

func TestProgramName(t *testing.T) {
	args := os.Args
	defer func() { os.Args = args }()
	os.Args = []string{"/srv/bin/orders,api\n" + strings.Repeat("x", 80)}
	got := programName(&Config{})
	if strings.ContainsAny(got, ",\n") || len(got) != maxProgram || !strings.HasPrefix(got, "orders_api_x") {
		t.Errorf("programName = %q: want the base name, commas and control characters replaced, cut at %d bytes", got, maxProgram)
	}
	if got := programName(&Config{Program: "billing"}); got != "billing" {
		t.Errorf("programName with Config.Program = %q", got)
	}
	if v := moduleVersion(); v == "" || strings.Contains(v, ",") {
		t.Errorf("moduleVersion = %q", v)
	}
}

func TestProgramInvalid(t *testing.T) {
	for _, v := range []string{"a%2Cb", strings.Repeat("p", maxProgram+1), "a%0Ab"} {
		_, err := ParseDSN("app:pw@tcp(10.0.0.1:3306)/app?rwshard.program=" + v)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != "rwshard.program" {
			t.Errorf("rwshard.program=%s: %v, want a ConfigError naming rwshard.program", v, err)
		}
	}
}
