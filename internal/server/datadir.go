package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/boomerangd/boomerang/internal/auth"
	"github.com/boomerangd/boomerang/internal/cluster"
)

// ErrOpenDataDir: the data directory may be read or entered by its group
// or by others.
var ErrOpenDataDir = errors.New("server: the data directory is open to other users")

// prepareDataDir creates the data directory, readable by its owner alone,
// or checks that an existing one is, unless allowOpen.
func prepareDataDir(dir string, allowOpen bool) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("server: create the data directory: %w", err)
	}
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("server: data directory: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("server: data directory %s is not a directory", dir)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 && !allowOpen {
		return fmt.Errorf("%w: %s has mode %04o and holds password hashes and sealed signing secrets; "+
			"run \"chmod 700 %s\", or start with --allow-open-data-dir", ErrOpenDataDir, dir, perm, dir)
	}
	return nil
}

// secretKeys returns the configured secret keys or, with none, the one in
// the data directory, generated on first start.
func secretKeys(cfg *Config, log *slog.Logger) ([][]byte, error) {
	path := filepath.Join(cfg.DataDir, SecretKeyFile)
	if len(cfg.SecretKeys) > 0 {
		keys := cfg.SecretKeys
		// Records sealed with the generated key stay readable, so they
		// can be sealed again with the configured one.
		if data, err := os.ReadFile(path); err == nil {
			old, err := auth.ParseKeys(string(data))
			if err != nil {
				return nil, fmt.Errorf("server: %s: %w", path, err)
			}
			keys = append(keys[:len(keys):len(keys)], old...)
		}
		return keys, nil
	}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		key := auth.GenerateKey()
		text := "# Seals the signing secrets in this directory. Keep it elsewhere: see docs/server.md.\n" + auth.EncodeKey(key) + "\n"
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			return nil, fmt.Errorf("server: write the secret key: %w", err)
		}
		log.Warn("generated a secret key into the data directory; anyone who can read the directory can open the signing secrets: "+
			"configure --secret-key-file or BOOMERANG_SECRET_KEY to keep the key elsewhere", "file", path)
		return [][]byte{key}, nil
	case err != nil:
		return nil, fmt.Errorf("server: read the secret key: %w", err)
	}
	keys, err := auth.ParseKeys(string(data))
	if err != nil {
		return nil, fmt.Errorf("server: %s: %w", path, err)
	}
	log.Warn("the secret key is kept in the data directory; configure --secret-key-file or BOOMERANG_SECRET_KEY to keep it elsewhere", "file", path)
	return keys, nil
}

// forgetDataDirKey removes the generated key once every record is sealed
// with a configured one.
func forgetDataDirKey(cfg *Config, log *slog.Logger) {
	if len(cfg.SecretKeys) == 0 {
		return
	}
	path := filepath.Join(cfg.DataDir, SecretKeyFile)
	if err := os.Remove(path); err == nil {
		log.Info("removed the generated secret key from the data directory: the signing secrets are sealed with the configured key", "file", path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		log.Warn("could not remove the generated secret key", "file", path, "err", strings.TrimPrefix(err.Error(), "remove "))
	}
}

// shareSecretKey makes a cluster node given no secret key seal with the
// cluster's (cluster.ShareSecretKey): the first node's, generated or
// from its data directory, which every other node writes into its own
// data directory first, keeping its earlier keys after it to open what
// they sealed. With etcd unreachable it keeps the keys it has: after its
// first start a node holds the cluster's.
func (s *Server) shareSecretKey(ctx context.Context, keys [][]byte) [][]byte {
	if len(s.cfg.SecretKeys) > 0 {
		return keys
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	shared, err := cluster.ShareSecretKey(ctx, s.cl.etcd, s.cfg.Cluster.Name, keys[0])
	if err != nil {
		s.log.Warn("the cluster's secret key is not known: keeping this node's", "err", err)
		return keys
	}
	if bytes.Equal(shared, keys[0]) {
		return keys
	}
	keys = append([][]byte{shared}, keys...)
	text := "# Seals the signing secrets of the cluster. Keep it elsewhere: see docs/server.md.\n"
	for _, k := range keys {
		text += auth.EncodeKey(k) + "\n"
	}
	if err := os.WriteFile(filepath.Join(s.cfg.DataDir, SecretKeyFile), []byte(text), 0o600); err != nil {
		s.log.Warn("could not keep the cluster's secret key in the data directory", "err", err)
	}
	return keys
}
