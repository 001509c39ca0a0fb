package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/boomerangd/boomerang/internal/auth"
	"github.com/boomerangd/boomerang/internal/outbox"
	"github.com/boomerangd/boomerang/internal/server"
)

// envPrefix starts the environment variable of every flag:
// BOOMERANG_TCP_ADDR sets --tcp-addr.
const envPrefix = "BOOMERANG_"

// envName is the environment variable of a flag.
func envName(flag string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// complete fills every flag the command line left unset from the
// environment, then from the config file, and moves the pools into the
// server configuration. Precedence: flags > environment > file >
// defaults.
func (o *options) complete(fs *pflag.FlagSet, lookupEnv func(string) (string, bool)) error {
	if !fs.Changed("config") {
		if v, ok := lookupEnv(envName("config")); ok {
			o.configFile = v
		}
	}
	file, err := readConfigFile(o.configFile)
	if err != nil {
		return err
	}
	var errs []error
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Changed || f.Name == "config" {
			return
		}
		if v, ok := lookupEnv(envName(f.Name)); ok {
			if err := setFlag(f, splitEnv(f, v)); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", envName(f.Name), err))
			}
			return
		}
		if v, ok := file[f.Name]; ok {
			if err := setFlag(f, v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %s: %w", o.configFile, f.Name, err))
			}
		}
	})
	for key := range file {
		if fs.Lookup(key) == nil || key == "config" {
			errs = append(errs, fmt.Errorf("%s: unknown setting %q (settings are named like the flags, e.g. tcp-addr)", o.configFile, key))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if len(o.pools) > 0 {
		o.cfg.Pools = o.pools
	}
	o.outbox = nil
	for _, spec := range o.outboxSources {
		src, err := outbox.ParseSource(spec)
		if err != nil {
			return fmt.Errorf("--outbox-source: %w", err)
		}
		o.outbox = append(o.outbox, src)
	}
	if len(o.cluster.Etcd) > 0 {
		c := o.cluster
		o.cfg.Cluster = &c
	} else if o.embedEtcd {
		return errors.New("--embed-etcd needs --etcd, the endpoint it serves")
	}
	if err := o.loadSecrets(lookupEnv); err != nil {
		return err
	}
	return o.checkLogging()
}

// envSecretKey holds secret keys themselves (not a file name), for
// deployments that pass secrets through the environment.
const envSecretKey = envPrefix + "SECRET_KEY"

// loadSecrets reads the TLS files, the sink CA file and the secret keys.
func (o *options) loadSecrets(lookupEnv func(string) (string, bool)) error {
	if o.tlsCert != "" || o.tlsKey != "" || o.tlsClientCA != "" {
		cfg, err := server.LoadTLS(o.tlsCert, o.tlsKey, o.tlsClientCA)
		if err != nil {
			return err
		}
		o.cfg.TLS = cfg
	}
	if o.sinkCA != "" {
		pool, err := server.LoadRootCAs(o.sinkCA)
		if err != nil {
			return fmt.Errorf("--sink-ca: %w", err)
		}
		o.cfg.SinkRootCAs = pool
	}
	text, fromEnv := lookupEnv(envSecretKey)
	switch {
	case fromEnv && o.secretKeyFile != "":
		return fmt.Errorf("give the secret keys with %s or --secret-key-file, not both", envSecretKey)
	case o.secretKeyFile != "":
		data, err := os.ReadFile(o.secretKeyFile)
		if err != nil {
			return fmt.Errorf("--secret-key-file: %w", err)
		}
		text = string(data)
	case !fromEnv:
		return nil
	}
	keys, err := auth.ParseKeys(text)
	if err != nil {
		return fmt.Errorf("secret keys: %w", err)
	}
	o.cfg.SecretKeys = keys
	return nil
}

// readConfigFile reads a YAML mapping of flag names to values: a scalar,
// or a list for repeatable flags. No file, no settings.
func readConfigFile(path string) (map[string][]string, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	var raw map[string]yaml.Node
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	settings := make(map[string][]string, len(raw))
	for key, node := range raw {
		switch node.Kind {
		case yaml.ScalarNode:
			settings[key] = []string{node.Value}
		case yaml.SequenceNode:
			for _, item := range node.Content {
				if item.Kind != yaml.ScalarNode {
					return nil, fmt.Errorf("config file %s: %s: list items must be plain values", path, key)
				}
				settings[key] = append(settings[key], item.Value)
			}
		default:
			return nil, fmt.Errorf("config file %s: %s must be a plain value or a list", path, key)
		}
	}
	return settings, nil
}

// splitEnv splits a repeatable flag's environment value on semicolons and
// whitespace; other flags take it whole.
func splitEnv(f *pflag.Flag, v string) []string {
	if _, ok := f.Value.(pflag.SliceValue); !ok {
		return []string{v}
	}
	return strings.FieldsFunc(v, func(r rune) bool { return r == ';' || r == ' ' || r == '\t' || r == '\n' })
}

// setFlag gives a flag its values: all of them for a repeatable flag, one
// otherwise.
func setFlag(f *pflag.Flag, values []string) error {
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		return sv.Replace(values)
	}
	if len(values) != 1 {
		return fmt.Errorf("takes one value, got %d", len(values))
	}
	return f.Value.Set(values[0])
}

var logLevels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}

func (o *options) checkLogging() error {
	if _, ok := logLevels[o.logLevel]; !ok {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", o.logLevel)
	}
	if !slices.Contains([]string{"text", "json"}, o.logFormat) {
		return fmt.Errorf("--log-format %q: want text or json", o.logFormat)
	}
	return nil
}
