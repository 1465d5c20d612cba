# expect: deny process
import signal
signal.signal(signal.SIGALRM, signal.SIG_IGN)
