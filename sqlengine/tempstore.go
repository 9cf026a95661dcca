package sqlengine

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

// tempStore holds a session's temporary tables.
type tempStore struct {
	tables map[string]*tempTable // by tempKey(db, name)
	// txnGen counts the session's transactions; a table keeps the data
	// it had when first written in transaction txnGen (tempTable.txnData).
	txnGen     uint64
	savepoints []tempSavepoint
}

// tempSavepoint is the data of every temporary table at a SAVEPOINT.
type tempSavepoint struct {
	name string
	data map[*tempTable]*tempData
}

func tempKey(db, name string) string {
	return strings.ToLower(db) + "\x00" + strings.ToLower(name)
}

// get returns the temporary table db.name, if the session has one.
func (s *tempStore) get(db, name string) (*tempTable, bool) {
	if s == nil || len(s.tables) == 0 {
		return nil, false
	}
	t, ok := s.tables[tempKey(db, name)]
	return t, ok
}

// add registers t under its name.
func (s *tempStore) add(t *tempTable) {
	if s.tables == nil {
		s.tables = map[string]*tempTable{}
	}
	s.tables[tempKey(t.db, t.name)] = t
}

// drop removes the temporary table db.name and reports whether it existed.
func (s *tempStore) drop(db, name string) bool {
	t, ok := s.get(db, name)
	if ok {
		delete(s.tables, tempKey(db, name))
		t.dropped = true
	}
	return ok
}

// rename renames the temporary table db.from to to.
func (s *tempStore) rename(db, from, to string) error {
	t, ok := s.get(db, from)
	if !ok {
		return sql.ErrTableNotFound.New(from)
	}
	if _, taken := s.get(db, to); taken {
		return sql.ErrTableAlreadyExists.New(to)
	}
	delete(s.tables, tempKey(db, from))
	t.name = to
	t.sch.Schema = t.sch.Schema.Copy()
	for _, c := range t.sch.Schema {
		c.Source = to
	}
	s.add(t)
	return nil
}

// beginTransaction starts a new transaction of the session.
func (s *tempStore) beginTransaction() {
	s.txnGen++
	s.savepoints = nil
}

// rollback restores every table the transaction wrote to its state at the
// transaction's start.
func (s *tempStore) rollback() {
	for _, t := range s.tables {
		if t.txnGen == s.txnGen && t.txnData != nil {
			t.d = t.txnData
			t.txnData = nil
			t.txnGen = 0
		}
	}
	s.savepoints = nil
}

// commit keeps the transaction's changes.
func (s *tempStore) commit() {
	for _, t := range s.tables {
		t.txnData = nil
	}
	s.savepoints = nil
}

// newCommand forgets the statement state of the previous command (a
// statement that began and never ended, e.g. after an error).
func (s *tempStore) newCommand() {
	for _, t := range s.tables {
		t.stmtDepth, t.stmtData = 0, nil
	}
}

// savepoint records the data of every table as savepoint name, replacing
// one of the same name.
func (s *tempStore) savepoint(name string) {
	s.release(name)
	sp := tempSavepoint{name: name, data: make(map[*tempTable]*tempData, len(s.tables))}
	for _, t := range s.tables {
		sp.data[t] = t.d.clone()
	}
	s.savepoints = append(s.savepoints, sp)
}

// rollbackTo restores the tables to savepoint name, which stays; a table
// created after it is emptied. It reports whether the savepoint exists.
func (s *tempStore) rollbackTo(name string) bool {
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

// release removes savepoint name.
func (s *tempStore) release(name string) {
	for i := len(s.savepoints) - 1; i >= 0; i-- {
		if s.savepoints[i].name == name {
			s.savepoints = append(s.savepoints[:i], s.savepoints[i+1:]...)
			return
		}
	}
}
