// report.html's filters (npu_hil/harness/report/html.py). Their state is in the URL fragment
// (#board=..&layout=..&outcome=..&q=..), so a matrix cell is a link to its cases and a filtered
// view can be shared; no network, no library. Inlined in a script element: no closing tag inside.
(function(){
var keys=['board','target','layout','outcome','prov'];
function state(){var s={};location.hash.replace(/^#/,'').split('&').forEach(function(p){
 var i=p.indexOf('=');if(i>0){s[p.slice(0,i)]=decodeURIComponent(p.slice(i+1));}});return s;}
function apply(s){var q=(s.q||'').toLowerCase(),shown=0,shownPass=0;
 keys.forEach(function(k){var e=document.getElementById('f-'+k);if(e){e.value=s[k]||'';}});
 var box=document.getElementById('f-q');if(box&&box.value!==(s.q||'')){box.value=s.q||'';}
 var rows=document.querySelectorAll('tr.case');
 for(var i=0;i<rows.length;i++){var r=rows[i],d=r.dataset,ok=true;
  for(var j=0;j<keys.length;j++){var v=s[keys[j]];if(v&&d[keys[j]]!==v){ok=false;break;}}
  if(ok&&q&&d.q.indexOf(q)<0){ok=false;}
  r.hidden=!ok;if(ok){shown++;if(d.folded==='1'){shownPass++;}}}
 var c=document.getElementById('count');if(c){c.textContent=shown+' of '+rows.length+' cases';}
 var f=document.getElementById('folded');
 if(f&&(s.outcome==='passed'||s.outcome==='skipped'||(q&&shownPass>0))){f.open=true;}}
function fromInputs(){var s={};keys.forEach(function(k){var e=document.getElementById('f-'+k);
 if(e&&e.value){s[k]=e.value;}});var b=document.getElementById('f-q');if(b&&b.value){s.q=b.value;}
 var h=Object.keys(s).map(function(k){return k+'='+encodeURIComponent(s[k]);}).join('&');
 history.replaceState(null,'',h?'#'+h:location.pathname);apply(s);}
window.addEventListener('hashchange',function(){apply(state());});
document.addEventListener('DOMContentLoaded',function(){
 keys.concat(['q']).forEach(function(k){var e=document.getElementById('f-'+k);
  if(e){e.addEventListener(k==='q'?'input':'change',fromInputs);}});
 var reset=document.getElementById('f-reset');
 if(reset){reset.addEventListener('click',function(){history.replaceState(null,'',
  location.pathname);apply({});});}
 apply(state());});
})();
