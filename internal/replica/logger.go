package replica

import (
	"fmt"
	"log/slog"
)

// raftLogger passes Raft's log to slog: its info, which narrates
// elections, at debug; warnings and errors as they are. Fatal and Panic
// panic, as Raft expects.
type raftLogger struct{ log *slog.Logger }

func (l raftLogger) Debug(v ...any)                 { l.log.Debug(fmt.Sprint(v...)) }
func (l raftLogger) Debugf(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l raftLogger) Info(v ...any)                  { l.log.Debug(fmt.Sprint(v...)) }
func (l raftLogger) Infof(format string, v ...any)  { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l raftLogger) Warning(v ...any)               { l.log.Warn(fmt.Sprint(v...)) }
func (l raftLogger) Warningf(format string, v ...any) {
	l.log.Warn(fmt.Sprintf(format, v...))
}
func (l raftLogger) Error(v ...any)                 { l.log.Error(fmt.Sprint(v...)) }
func (l raftLogger) Errorf(format string, v ...any) { l.log.Error(fmt.Sprintf(format, v...)) }
func (l raftLogger) Fatal(v ...any)                 { l.Panic(v...) }
func (l raftLogger) Fatalf(format string, v ...any) { l.Panicf(format, v...) }
func (l raftLogger) Panic(v ...any) {
	msg := fmt.Sprint(v...)
	l.log.Error(msg)
	panic(msg)
}
func (l raftLogger) Panicf(format string, v ...any) { l.Panic(fmt.Sprintf(format, v...)) }
