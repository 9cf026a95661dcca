package sqlengine

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression/function"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/certusdb/certus/sqlengine/internal/mysqlexpr"
	"github.com/certusdb/certus/sqlengine/internal/treewalk"
)

// Statements that read or write the node's host files: LOAD_FILE(),
// SELECT ... INTO OUTFILE / DUMPFILE and LOAD DATA INFILE (not LOCAL, whose
// file is the client's). As in MySQL they need the FILE privilege and stay
// inside secure_file_priv, a directory of their own: go-mysql-server let
// any user read any file the process could (/etc/shadow, the node's own
// log through /proc/self/fd) and write anywhere.

// FileAccess is where statements may read and write files.
type FileAccess struct {
	// dir is secure_file_priv, absolute with symbolic links resolved;
	// "" when it is NULL (no statement may touch a file).
	dir string
}

// NewFileAccess returns the access of secure_file_priv dir ("" for NULL).
// dir must exist and must not hold dataDir, whose files (the log, the
// tables) no statement may read.
func NewFileAccess(dir, dataDir string) (*FileAccess, error) {
	if dir == "" {
		return &FileAccess{}, nil
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("secure_file_priv: %w", err)
	}
	if real, err = filepath.Abs(real); err != nil {
		return nil, fmt.Errorf("secure_file_priv: %w", err)
	}
	if dataDir != "" {
		data, err := filepath.EvalSymlinks(dataDir)
		if err == nil {
			data, err = filepath.Abs(data)
		}
		if err != nil {
			return nil, fmt.Errorf("data dir: %w", err)
		}
		if within(data, real) {
			return nil, fmt.Errorf("secure_file_priv %s holds the data directory %s: statements could read the node's files", real, data)
		}
	}
	return &FileAccess{dir: real}, nil
}

// SetFiles makes f where the provider's statements may read and write
// files (secure_file_priv; nil: nowhere).
func (p *Provider) SetFiles(f *FileAccess) { p.guard.files = f }

// within reports whether path is dir or lies under it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}

var (
	errSecureFilePriv = mysql.NewSQLError(mysql.EROptionPreventsStatement, mysql.SSUnknownSQLState,
		"The MySQL server is running with the --secure-file-priv option so it cannot execute this statement")
	errFileExists = errors.New("exists")
)

// resolve returns the file that name means in secure_file_priv (a
// relative name is relative to it), or an error when the file is outside
// it, following symbolic links. For a file to be written (create) the
// file must not exist yet (MySQL's 1086) and its directory must.
func (f *FileAccess) resolve(name string, create bool) (string, error) {
	if f == nil || f.dir == "" {
		return "", errSecureFilePriv
	}
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(f.dir, path)
	}
	path = filepath.Clean(path)
	var real string
	var err error
	real, err = filepath.EvalSymlinks(path)
	switch {
	case create:
		// a file to make: its directory decides
		real, err = filepath.EvalSymlinks(filepath.Dir(path))
		real = filepath.Join(real, filepath.Base(path))
	case errors.Is(err, fs.ErrNotExist) && within(path, f.dir):
		// a file to read that is not there: opening it fails with its
		// own error, as MySQL's does
		real, err = path, nil
	}
	if err != nil || !within(real, f.dir) || real == f.dir {
		return "", errSecureFilePriv
	}
	if create {
		if _, err := os.Lstat(real); err == nil {
			return "", mysql.NewSQLError(mysql.ERFileExists, mysql.SSUnknownSQLState, "File '%s' already exists", name)
		}
	}
	return real, nil
}

// mayUseFiles reports whether ctx's user holds FILE.
func mayUseFiles(ctx *sql.Context, users *mysql_db.MySQLDb) bool {
	return users == nil || hasGlobal(ctx, users, sql.PrivilegeType_File)
}

// accessDenied is MySQL's 1045, its answer to a file statement of a user
// without FILE.
func accessDenied(ctx *sql.Context) error {
	c := ctx.Session.Client()
	return mysql.NewSQLError(mysql.ERAccessDeniedError, mysql.SSAccessDeniedError, "Access denied for user '%s'@'%s' (using password: YES)", c.User, c.Address)
}

// loadData checks LOAD DATA INFILE and points it at the resolved file.
func (f *FileAccess) loadData(ctx *sql.Context, users *mysql_db.MySQLDb, st *ast.Load) error {
	if st.Local {
		return nil
	}
	if !mayUseFiles(ctx, users) {
		return accessDenied(ctx)
	}
	path, err := f.resolve(st.Infile, false)
	if err != nil {
		return err
	}
	st.Infile = path
	return nil
}

// selectInto checks a SELECT ... INTO OUTFILE / DUMPFILE and points it at
// the resolved file.
func (f *FileAccess) selectInto(ctx *sql.Context, users *mysql_db.MySQLDb, st ast.Statement) error {
	var err error
	treewalk.AST(reflect.ValueOf(&st).Elem(), func(v reflect.Value) {
		if err != nil || v.Kind() != reflect.Pointer {
			return
		}
		into, ok := v.Interface().(*ast.Into)
		if !ok || into == nil {
			return
		}
		for _, name := range []*string{&into.Outfile, &into.Dumpfile} {
			if *name == "" || err != nil {
				continue
			}
			if !mayUseFiles(ctx, users) {
				err = accessDenied(ctx)
				return
			}
			var path string
			if path, err = f.resolve(*name, true); err == nil {
				*name = path
			}
		}
	})
	return err
}

func init() {
	mysqlexpr.WrapBuiltIns(function.BuiltIns, map[string]mysqlexpr.BuiltInWrap{"load_file": func(ctx *sql.Context, inner sql.Function, args []sql.Expression) (sql.Expression, error) {
		e, err := inner.NewInstance(ctx, args)
		if err != nil {
			return nil, err
		}
		return &loadFile{LoadFile: e.(*function.LoadFile), name: args[0]}, nil
	}})
}

// secureFilePrivVar is secure_file_priv as files has it: its directory,
// or NULL.
func secureFilePrivVar(files *FileAccess) sql.SystemVariable {
	var dir any
	if files != nil && files.dir != "" {
		dir = files.dir
	}
	return &sql.MysqlSystemVariable{Name: "secure_file_priv", Scope: sql.GetMysqlScope(sql.SystemVariableScope_Global),
		Type: types.NewSystemStringType("secure_file_priv"), Default: dir}
}

// loadFile is LOAD_FILE(name): the file's bytes, or NULL when the user
// lacks FILE, the file is outside secure_file_priv, missing, unreadable or
// longer than max_allowed_packet (MySQL's rules).
type loadFile struct {
	*function.LoadFile
	name sql.Expression
}

// Eval implements sql.Expression.
func (l *loadFile) Eval(ctx *sql.Context, row sql.Row) (interface{}, error) {
	v, err := l.name.Eval(ctx, row)
	if err != nil || v == nil {
		return nil, err
	}
	name, _, err := types.LongText.Convert(ctx, v)
	if err != nil {
		return nil, err
	}
	s, ok := ctx.Session.(*Session)
	if !ok || !mayUseFiles(ctx, s.p.guard.users) {
		return nil, nil
	}
	path, err := s.p.guard.files.resolve(name.(string), false)
	if err != nil {
		return nil, nil
	}
	file, err := os.Open(path)
	if err != nil {
		return nil, nil
	}
	defer file.Close()
	limit := maxAllowedPacket.Load()
	data, err := io.ReadAll(io.LimitReader(file, limit+1))
	if err != nil || int64(len(data)) > limit {
		return nil, nil
	}
	return data, nil
}

// WithChildren implements sql.Expression.
func (l *loadFile) WithChildren(ctx *sql.Context, children ...sql.Expression) (sql.Expression, error) {
	if len(children) != 1 {
		return nil, sql.ErrInvalidChildrenNumber.New(l, len(children), 1)
	}
	inner := function.NewLoadFile(ctx, children[0]).(*function.LoadFile)
	return &loadFile{LoadFile: inner, name: children[0]}, nil
}
