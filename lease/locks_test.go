package lease
