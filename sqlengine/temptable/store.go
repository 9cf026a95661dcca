// Package temptable is the session's temporary tables (CREATE TEMPORARY
// TABLE): an in-memory table engine for go-mysql-server, transactional
// like InnoDB's temporary tables, never replicated.
package temptable

import (
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
)

// Temporary tables (CREATE TEMPORARY TABLE) live in the memory of the
// session that created them. As in Galera they are never replicated: no
// other session and no other node sees them, creating or dropping one does
// not commit the open transaction, and they are dropped when the session
// ends. One takes precedence over a stored table of the same name.
//
// Their rows are transactional, like InnoDB's temporary tables: a failed
// statement, ROLLBACK, ROLLBACK TO SAVEPOINT, a deadlock and a lost
// certification undo their changes. Each table's data is a set of
// copy-on-write B-trees (tempData), so keeping the state a statement, a
// transaction or a savepoint started from costs O(1) per table.

// Store holds a session's temporary tables.
type Store struct {
	tables map[string]*Table // by tempKey(db, name)
	// txnGen counts the session's transactions; a table keeps the data
	// it had when first written in transaction txnGen (Table.txnData).
	txnGen     uint64
	savepoints []tempSavepoint
}

// tempSavepoint is the data of every temporary table at a SAVEPOINT.
type tempSavepoint struct {
	name string
	data map[*Table]*tempData
}

func tempKey(db, name string) string {
	return strings.ToLower(db) + "\x00" + strings.ToLower(name)
}

// Get returns the temporary table db.name, if the session has one.
func (s *Store) Get(db, name string) (*Table, bool) {
	if s == nil || len(s.tables) == 0 {
		return nil, false
	}
	t, ok := s.tables[tempKey(db, name)]
	return t, ok
}

// Add registers t under its name.
func (s *Store) Add(t *Table) {
	if s.tables == nil {
		s.tables = map[string]*Table{}
	}
	s.tables[tempKey(t.db, t.name)] = t
}

// Drop removes the temporary table db.name and reports whether it existed.
func (s *Store) Drop(db, name string) bool {
	t, ok := s.Get(db, name)
	if ok {
		delete(s.tables, tempKey(db, name))
		t.dropped = true
	}
	return ok
}

// InDatabase returns the temporary tables of database db.
func (s *Store) InDatabase(db string) []sql.Table {
	var out []sql.Table
	for _, t := range s.tables {
		if strings.EqualFold(t.db, db) {
			out = append(out, t)
		}
	}
	return out
}

// Rename renames the temporary table db.from to to.
func (s *Store) Rename(db, from, to string) error {
	t, ok := s.Get(db, from)
	if !ok {
		return sql.ErrTableNotFound.New(from)
	}
	if _, taken := s.Get(db, to); taken {
		return sql.ErrTableAlreadyExists.New(to)
	}
	delete(s.tables, tempKey(db, from))
	t.name = to
	t.sch.Schema = t.sch.Schema.Copy()
	for _, c := range t.sch.Schema {
		c.Source = to
	}
	s.Add(t)
	return nil
}

// BeginTransaction starts a new transaction of the session.
func (s *Store) BeginTransaction() {
	s.txnGen++
	s.savepoints = nil
}

// Rollback restores every table the transaction wrote to its state at the
// transaction's start.
func (s *Store) Rollback() {
	for _, t := range s.tables {
		if t.txnGen == s.txnGen && t.txnData != nil {
			t.d = t.txnData
			t.txnData = nil
			t.txnGen = 0
		}
	}
	s.savepoints = nil
}

// Commit keeps the transaction's changes.
func (s *Store) Commit() {
	for _, t := range s.tables {
		t.txnData = nil
	}
	s.savepoints = nil
}

// NewCommand forgets the statement state of the previous command (a
// statement that began and never ended, e.g. after an error).
func (s *Store) NewCommand() {
	for _, t := range s.tables {
		t.stmtDepth, t.stmtData = 0, nil
	}
}

// Savepoint records the data of every table as savepoint name, replacing
// one of the same name.
func (s *Store) Savepoint(name string) {
	s.Release(name)
	sp := tempSavepoint{name: name, data: make(map[*Table]*tempData, len(s.tables))}
	for _, t := range s.tables {
		sp.data[t] = t.d.clone()
	}
	s.savepoints = append(s.savepoints, sp)
}

// RollbackTo restores the tables to savepoint name, which stays; a table
// created after it is emptied. It reports whether the savepoint exists.
func (s *Store) RollbackTo(name string) bool {
	for i := len(s.savepoints) - 1; i >= 0; i-- {
		sp := s.savepoints[i]
		if sp.name != name {
			continue
		}
		for _, t := range s.tables {
			t.beginWrite()
			if d, ok := sp.data[t]; ok {
				t.d = d.clone()
			} else {
				t.d = t.newData()
			}
		}
		s.savepoints = s.savepoints[:i+1]
		return true
	}
	return false
}

// Release removes savepoint name.
func (s *Store) Release(name string) {
	for i := len(s.savepoints) - 1; i >= 0; i-- {
		if s.savepoints[i].name == name {
			s.savepoints = append(s.savepoints[:i], s.savepoints[i+1:]...)
			return
		}
	}
}
