package track

import (
	"sync"
	"testing"
)

func TestWaitReturnsOnceNothingRuns(t *testing.T) {
	var tr Tracker
	tr.Wait() // nothing runs
	tr.Add()
	released := make(chan struct{})
	waited := make(chan struct{})
	go func() { tr.Wait(); close(waited) }()
	go func() { <-released; tr.Done() }()
	select {
	case <-waited:
		t.Fatal("Wait returned while work ran")
	default:
	}
	close(released)
	<-waited
}

func TestWorkAddedWhileWaitingIsWaitedFor(t *testing.T) {
	var tr Tracker
	tr.Add()
	steps := make(chan struct{})
	waited := make(chan struct{})
	go func() { tr.Wait(); close(waited) }()
	go func() {
		tr.Add() // starts while Wait waits
		tr.Done()
		<-steps
		tr.Done()
	}()
	close(steps)
	<-waited
	if n := tr.running.Load(); n != 0 {
		t.Fatalf("Wait returned with %d running", n)
	}
}

func TestConcurrentAddDoneWaitRace(t *testing.T) {
	var tr Tracker
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				tr.Add()
				tr.Done()
			}
		}()
		go tr.Wait()
	}
	wg.Wait()
	tr.Wait()
}

func TestBoundedLocksClose_WaitUntilGivesUpWhenStoppedAndALaterWaitStillWaits(t *testing.T) {
	var tr Tracker
	if !tr.WaitUntil(nil) {
		t.Fatal("WaitUntil with nothing running = false")
	}
	tr.Add()
	stop := make(chan struct{})
	close(stop)
	if tr.WaitUntil(stop) {
		t.Fatal("WaitUntil with work running and stop closed = true")
	}
	waited := make(chan bool)
	go func() { waited <- tr.WaitUntil(make(chan struct{})) }()
	tr.Done()
	if !<-waited {
		t.Fatal("a WaitUntil after one that gave up did not see the work end")
	}
}
