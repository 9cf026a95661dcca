package sqlengine

import (
	"time"

	"github.com/dolthub/go-mysql-server/sql"
)

// Events. Certus has no event scheduler: CREATE EVENT is refused, as
// before, but databases answer for their (no) events, so SHOW EVENTS and
// information_schema.events work as in MySQL with no events defined,
// instead of failing the whole query.

var _ sql.QuiescableEventDatabase = (*Database)(nil)

// GetEvent implements sql.EventDatabase.
func (d *Database) GetEvent(*sql.Context, string) (sql.EventDefinition, bool, error) {
	return sql.EventDefinition{}, false, nil
}

// GetEvents implements sql.EventDatabase.
func (d *Database) GetEvents(*sql.Context) ([]sql.EventDefinition, interface{}, error) {
	return nil, nil, nil
}

// SaveEvent implements sql.EventDatabase: events are not supported.
func (d *Database) SaveEvent(*sql.Context, sql.EventDefinition) (bool, error) {
	return false, sql.ErrEventsNotSupported.New(d.name)
}

// DropEvent implements sql.EventDatabase.
func (d *Database) DropEvent(_ *sql.Context, name string) error {
	return sql.ErrEventDoesNotExist.New(name)
}

// UpdateEvent implements sql.EventDatabase: events are not supported.
func (d *Database) UpdateEvent(*sql.Context, string, sql.EventDefinition) (bool, error) {
	return false, sql.ErrEventsNotSupported.New(d.name)
}

// UpdateLastExecuted implements sql.EventDatabase (no event ever runs).
func (d *Database) UpdateLastExecuted(*sql.Context, string, time.Time) error { return nil }

// NeedsToReloadEvents implements sql.EventDatabase.
func (d *Database) NeedsToReloadEvents(*sql.Context, interface{}) (bool, error) { return false, nil }

// QuiescableEvents implements sql.QuiescableEventDatabase: events change
// only through this interface (they never do).
func (d *Database) QuiescableEvents() bool { return true }
