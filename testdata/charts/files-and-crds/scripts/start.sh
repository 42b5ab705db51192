#!/bin/sh
echo start
echo done
