package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// scriptTimeout bounds one script's real running time.
const scriptTimeout = 5 * time.Second

// scriptRun is the state of one EVAL/EVALSHA execution.
type scriptRun struct {
	e    *Engine
	c    *client
	sha  string
	line int // line of the last redis.call that raised
}

// luaVM is an engine's reusable Lua state (scripts run one at a time under
// the engine lock, as in a real server) and its compiled-script cache.
type luaVM struct {
	L      *lua.LState
	run    *scriptRun // the script currently running
	protos map[string]*lua.FunctionProto
}

func (e *Engine) luaVM() *luaVM {
	if e.vm != nil {
		return e.vm
	}
	vm := &luaVM{L: lua.NewState(lua.Options{SkipOpenLibs: true}), protos: map[string]*lua.FunctionProto{}}
	openLibs(vm.L)
	vm.L.SetGlobal("redis", vm.redisTable(vm.L))
	e.vm = vm
	return vm
}

// compile returns the compiled script, parsing it once per source.
func (vm *luaVM) compile(sha, src string) (*lua.FunctionProto, error) {
	if p, ok := vm.protos[sha]; ok {
		return p, nil
	}
	chunk, err := parse.Parse(strings.NewReader(src), "user_script")
	if err != nil {
		return nil, err
	}
	p, err := lua.Compile(chunk, "user_script")
	if err != nil {
		return nil, err
	}
	vm.protos[sha] = p
	return p, nil
}

// runScript compiles and runs src (caching it when cache is set) with
// KEYS and ARGV, and converts its result to a reply.
func (e *Engine) runScript(c *client, sha, src string, keys, argv []string, cache bool) reply {
	vm := e.luaVM()
	proto, err := vm.compile(sha, src)
	if err != nil {
		return compileError(err, src)
	}
	if cache {
		e.scripts[sha] = src
	}
	L := vm.L
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	L.SetContext(ctx)
	defer L.RemoveContext()
	defer L.SetTop(0)
	vm.run = &scriptRun{e: e, c: c, sha: sha, line: 1}
	e.scriptAt = e.now()
	defer func() { vm.run, e.scriptAt = nil, 0 }()
	L.SetGlobal("KEYS", stringTable(L, keys))
	L.SetGlobal("ARGV", stringTable(L, argv))
	L.Push(L.NewFunctionFromProto(proto))
	if err := L.PCall(0, 1, nil); err != nil {
		return vm.run.runtimeError(err)
	}
	return luaToReply(L.Get(-1))
}

func openLibs(L *lua.LState) {
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	for _, name := range []string{"dofile", "loadfile", "print"} {
		L.SetGlobal(name, lua.LNil)
	}
}

// compileCheck reports the compile error of src, or OK.
func compileCheck(src string) reply {
	if _, err := parse.Parse(strings.NewReader(src), "user_script"); err != nil {
		return compileError(err, src)
	}
	return okReply
}

var gopherSyntax = regexp.MustCompile(`line:(\d+)\(column:\d+\) near '(.*)':\s*(.*)`)

// compileError renders a parse error the way Lua 5.1 inside Redis does.
func compileError(err error, src string) reply {
	msg := err.Error()
	var api *lua.ApiError
	if errors.As(err, &api) {
		msg = api.Object.String()
	}
	if m := gopherSyntax.FindStringSubmatch(msg); m != nil {
		near := m[2]
		if near == "EOF" {
			near = "<eof>"
		}
		msg = fmt.Sprintf("user_script:%s: unexpected symbol near '%s'", m[1], near)
	} else if strings.Contains(msg, " at EOF:") {
		line := strings.Count(strings.TrimRight(src, "\n"), "\n") + 1
		msg = fmt.Sprintf("user_script:%d: unexpected symbol near '<eof>'", line)
	}
	msg = strings.TrimSpace(strings.NewReplacer("\r", " ", "\n", " ").Replace(msg))
	return errReply("ERR Error compiling script (new function): " + msg)
}

func stringTable(L *lua.LState, items []string) *lua.LTable {
	t := L.CreateTable(len(items), 0)
	for i, s := range items {
		t.RawSetInt(i+1, lua.LString(s))
	}
	return t
}

func (vm *luaVM) redisTable(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	L.SetFuncs(t, map[string]lua.LGFunction{
		"call":  func(L *lua.LState) int { return vm.run.call(L, true) },
		"pcall": func(L *lua.LState) int { return vm.run.call(L, false) },
		"error_reply": func(L *lua.LState) int {
			L.Push(errorTable(L, L.CheckString(1)))
			return 1
		},
		"status_reply": func(L *lua.LState) int {
			st := L.NewTable()
			st.RawSetString("ok", lua.LString(L.CheckString(1)))
			L.Push(st)
			return 1
		},
		"sha1hex": func(L *lua.LState) int {
			L.Push(lua.LString(scriptSHA(L.CheckString(1))))
			return 1
		},
		"log": func(*lua.LState) int { return 0 },
	})
	for name, level := range map[string]int{"LOG_DEBUG": 0, "LOG_VERBOSE": 1, "LOG_NOTICE": 2, "LOG_WARNING": 3} {
		t.RawSetString(name, lua.LNumber(level))
	}
	return t
}

func errorTable(L *lua.LState, msg string) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("err", lua.LString(msg))
	return t
}

// call implements redis.call (raise=true) and redis.pcall.
func (r *scriptRun) call(L *lua.LState, raise bool) int {
	args := make([]string, 0, L.GetTop())
	for i := 1; i <= L.GetTop(); i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			args = append(args, string(v))
		case lua.LNumber:
			args = append(args, formatLuaNumber(float64(v)))
		default:
			return r.fail(L, raise, "ERR Lua redis lib command arguments must be strings or integers")
		}
	}
	res := r.e.scriptCall(r.c, args)
	if isError(res) {
		return r.fail(L, raise, res.str)
	}
	L.Push(replyToLua(L, res))
	return 1
}

func (r *scriptRun) fail(L *lua.LState, raise bool, msg string) int {
	if !raise {
		L.Push(errorTable(L, msg))
		return 1
	}
	if m := regexp.MustCompile(`:(\d+):`).FindStringSubmatch(L.Where(1)); m != nil {
		r.line, _ = strconv.Atoi(m[1])
	}
	L.Error(errorTable(L, msg), 1)
	return 0
}

// runtimeError renders a script failure: "<msg> script: <sha>, on @user_script:<line>."
func (r *scriptRun) runtimeError(err error) reply {
	var api *lua.ApiError
	msg := err.Error()
	if errors.As(err, &api) {
		if t, ok := api.Object.(*lua.LTable); ok {
			if s, ok := t.RawGetString("err").(lua.LString); ok {
				return errorf("%s script: %s, on @user_script:%d.", string(s), r.sha, r.line)
			}
		}
		msg = api.Object.String()
	}
	return errorf("ERR %s script: %s, on @user_script:%d.", msg, r.sha, r.line)
}

func formatLuaNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e17 {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', 17, 64)
}

// luaToReply converts a script's return value (Redis' Lua conversion rules).
func luaToReply(v lua.LValue) reply {
	switch v := v.(type) {
	case lua.LNumber:
		return integer(int64(v))
	case lua.LString:
		return bulk(string(v))
	case lua.LBool:
		if v {
			return integer(1)
		}
		return null()
	case *lua.LTable:
		if s, ok := v.RawGetString("err").(lua.LString); ok {
			return errReply(string(s))
		}
		if s, ok := v.RawGetString("ok").(lua.LString); ok {
			return status(string(s))
		}
		var out []reply
		for i := 1; ; i++ {
			item := v.RawGetInt(i)
			if item == lua.LNil {
				break
			}
			out = append(out, luaToReply(item))
		}
		return array(out...)
	}
	return null()
}

// replyToLua converts a command reply for the script (RESP2 rules).
func replyToLua(L *lua.LState, r reply) lua.LValue {
	switch r.kind {
	case kindInt:
		return lua.LNumber(r.num)
	case kindBulk, kindVerbatim, kindDouble:
		return lua.LString(r.str)
	case kindStatus:
		t := L.NewTable()
		t.RawSetString("ok", lua.LString(r.str))
		return t
	case kindError:
		return errorTable(L, r.str)
	case kindArray, kindMap, kindSet:
		t := L.CreateTable(len(r.elems), 0)
		for i, e := range r.elems {
			t.RawSetInt(i+1, replyToLua(L, e))
		}
		return t
	}
	return lua.LFalse
}
