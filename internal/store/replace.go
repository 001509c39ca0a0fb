package store

import (
	"encoding/binary"

	"github.com/boomerangd/boomerang/internal/shard"
)

// A task registered with a replace key (storepb.Task.replace_key) is
// indexed under p|shard|client|group NUL key|id, so that a later
// registration with the same key finds it. The index is kept with the
// task record, like the others; keys may repeat (a task under way and a
// newer one waiting), hence the id. Groups and keys hold no NUL, so
// joining them with one is unambiguous.

func replaceKey(shard uint16, client, group, key string, id uint64) []byte {
	return binary.BigEndian.AppendUint64(replacePrefix(shard, client, group, key), id)
}

func replacePrefix(shard uint16, client, group, key string) []byte {
	return namedKey(tagReplace, shard, client, group+"\x00"+key)
}

// ReplaceKeyShard is the shard of an ungrouped task with a replace key: a
// function of the key, so a later registration with it finds the task.
// A grouped task lives on its group's shard.
func (s *Store) ReplaceKeyShard(client, key string) uint16 {
	return shard.OfReplaceKey(s.shards, client, key)
}

// ReplaceKeyTasks calls fn with the ids of the tasks of a client's group
// ("" = ungrouped) registered with a replace key, oldest first, until fn
// returns false.
func (s *Store) ReplaceKeyTasks(shard uint16, client, group, key string, fn func(id uint64) bool) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.gate.Exit()
	prefix := replacePrefix(shard, client, group, key)
	err := scan(s.db, prefix, prefixEnd(prefix), func(k, _ []byte) error {
		if len(k) != len(prefix)+8 {
			return corruptf("replace key index key %x", k)
		}
		if !fn(binary.BigEndian.Uint64(k[len(prefix):])) {
			return errStop
		}
		return nil
	})
	if err == errStop {
		return nil
	}
	return err
}
